#if RCFUZZ_LIBFUZZER
    import RCFuzzing

    // libFuzzer's C entry points, for drivers that link against them (AFL++'s libAFLDriver, or
    // libFuzzer's own `main` in a build that links one); `main.swift` runs LLVMFuzzerRunDriver.

    @_cdecl("LLVMFuzzerInitialize")
    public func fuzzerInitialize(
        _ argc: UnsafeMutablePointer<Int32>?,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?
    ) -> Int32 {
        LibFuzzerSupport.initialize()
        return 0
    }

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        LibFuzzerSupport.testOneInput(data, size)
    }
#endif
