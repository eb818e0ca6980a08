import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// Waits until `condition` holds, checking every 20 ms, for at most `timeout` seconds: for what a
/// test can only observe from outside (a file appears, a process logs a line, a value is served).
/// Returns whether it held; the caller's `#expect` says what was awaited.
public func eventually(_ timeout: Double = 15, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}

/// The same for async code: checks `condition` every 20 ms until it holds or `timeout` has passed,
/// sleeping between checks without holding a thread (the synchronous one blocks a thread of the
/// cooperative pool, which the code under test may need). Returns whether it held. The timeout has
/// no default so that a call names this overload: `await eventually(.seconds(15)) { ... }`.
public func eventually(
    _ timeout: Duration, _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}
