import RCFuzzing

#if canImport(Glibc)
    import Glibc
#endif

// Built normally: replays files through a fuzz target. Built with `-D RCFUZZ_LIBFUZZER` and
// `-sanitize=fuzzer` (`make fuzz`): libFuzzer, on the target RCFUZZ_TARGET names.
#if RCFUZZ_LIBFUZZER
    exit(LibFuzzerSupport.runDriver())
#else
    exit(FuzzReplayer.main(arguments: Array(CommandLine.arguments.dropFirst())))
#endif
