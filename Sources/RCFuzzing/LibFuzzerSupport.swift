#if canImport(Glibc)
    import Glibc
#endif

/// What the libFuzzer build of `rcfuzz` runs for each input: the target named by `RCFUZZ_TARGET`.
/// A property violation aborts with its message, so libFuzzer records the input as a crash.
public enum LibFuzzerSupport {
    nonisolated(unsafe) private static var target: FuzzTarget?

    /// Picks the target from `RCFUZZ_TARGET`; exits with a usage message when it names none.
    public static func initialize() {
        let name = getenv("RCFUZZ_TARGET").map { String(cString: $0) } ?? ""
        guard let found = FuzzTargets.named(name) else {
            FuzzReplayer.writeError(
                "Error: set RCFUZZ_TARGET to one of: \(FuzzTargets.all.map(\.name).joined(separator: ", "))\n")
            exit(64)
        }
        target = found
    }

    /// Runs libFuzzer's driver (`LLVMFuzzerRunDriver`) on the command line, with ``testOneInput`` as
    /// the callback, and returns its exit status (`--list` prints the target names instead).
    ///
    /// The package manager gives an executable target its own `main` on Linux, so libFuzzer's `main`
    /// never links in; this `main` calls the driver instead. It is looked up at run time (the build
    /// exports it), which calls it with the C calling convention and keeps the normal build free of
    /// libFuzzer symbols.
    public static func runDriver() -> Int32 {
        typealias Callback = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
        typealias Driver =
            @convention(c) (
                UnsafeMutablePointer<Int32>, UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                Callback
            ) -> Int32
        if CommandLine.arguments.dropFirst().first == "--list" {
            for target in FuzzTargets.all { print(target.name) }
            return 0
        }
        guard let symbol = dlsym(nil, "LLVMFuzzerRunDriver") else {
            FuzzReplayer.writeError("Error: LLVMFuzzerRunDriver not found: build with `make fuzz`\n")
            return 1
        }
        initialize()
        let callback: Callback = { data, size in LibFuzzerSupport.testOneInput(data, size) }
        let driver = unsafeBitCast(symbol, to: Driver.self)
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = CommandLine.unsafeArgv
        return driver(&argc, &argv, callback)
    }

    public static func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        if target == nil { initialize() }
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        do {
            _ = try target!.run(bytes)
        } catch {
            fatalError("\(error)")
        }
        return 0
    }
}
