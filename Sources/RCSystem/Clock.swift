import RCCore

#if canImport(Glibc)
    import Glibc
#endif

extension Timestamp {
    /// The wall clock now (`CLOCK_REALTIME`): the one place a timestamp comes from the system.
    public static func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(milliseconds: Int64(spec.tv_sec) * 1_000 + Int64(spec.tv_nsec) / 1_000_000)
    }
}
