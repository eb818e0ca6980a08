import Glibc
import TestSupport
import Testing

/// The tests' process runner: children start as a shell starts them, and their end is their exit.
@Suite struct SubprocessTests {
    /// The test runner's threads block most signals; a child that inherited that ignored `kill $!`,
    /// so a README's background web server outlived its block.
    @Test func aChildCanSignalWhatItStarted() throws {
        let result = try runProcess("/bin/sh", ["-c", "sleep 600 & kill $!; wait $!; echo $?"])
        #expect(result.stdout == "143\n", "SIGTERM ends the sleep: \(result)")
    }

    /// A background process holding stdout open does not keep the caller waiting, and does not
    /// outlive the child: before, waiting hung until it exited.
    @Test func theChildsExitEndsTheWaitAndWhatItLeftRunningIsStopped() throws {
        let result = try runProcess("/bin/sh", ["-c", "sleep 600 & echo $!; echo bye >&2; exit 3"])
        #expect(result.status == 3)
        #expect(result.stderr == "bye\n")
        let pid = try #require(Int32(result.stdout.dropLast()))
        #expect(eventually { kill(pid, 0) != 0 }, "the background sleep \(pid) was stopped")
    }

    @Test func inputIsFedAsWritten() throws {
        let cat = try Subprocess("/bin/cat", [], input: true)
        cat.write("first\n")
        cat.write("second\n")
        cat.closeInput()
        #expect(cat.finish().stdout == "first\nsecond\n")
    }

    @Test func aSignalEndIsReportedAsAShellWould() throws {
        #expect(try runProcess("/bin/sh", ["-c", "kill -KILL $$"]).status == 128 + SIGKILL)
    }
}
