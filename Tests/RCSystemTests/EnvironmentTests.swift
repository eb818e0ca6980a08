import Glibc
import RCSystem
import Testing

/// The environment as the programs read it: the whole of it (the daemon, which passes it on to
/// hooks), or only the variables a program names (the CLI). Read only: a `setenv` here could race
/// with the other tests of this process, which read the environment from threads of their own.
@Suite struct EnvironmentTests {
    @Test func namedVariablesAreReadAndOthersLeftOut() throws {
        let whole = Environment.current()
        let name = try #require(whole.keys.min(), "the test runs with an environment")
        let unset = "RCAGENT_TEST_UNSET_" + String(whole.count)
        #expect(whole[unset] == nil)

        // As `getenv` reads it: the first of a name listed twice, where the whole dictionary keeps the last.
        #expect(Environment.current([name, unset]) == [name: String(cString: getenv(name))])
        #expect(Environment.current([]) == [:])
    }
}
