import Glibc
import RCCore
import RCSystem

/// The daemon's side of `rcagent hold`: whether activations are held off now (``HoldLock/isHeld()``
/// and ``HoldPolicy``), and a call when the last hold is let go. A hold ends by closing its descriptor
/// of the lock file (the holding process exits), which inotify reports as a close of that file; each
/// close is checked with a non-blocking exclusive try, so a close by a reader (`hold --list`) or by
/// one of several holders calls nothing. The daemon's own descriptor stays open for its life, so its
/// probes cause no events.
final class HoldWatch: Sendable {
    let lock: HoldLock
    private let watch: DescriptorWatch

    /// Watches the lock file at `path` (created when missing); `onRelease` runs on the watch's queue
    /// each time the lock is found free after a close.
    init(path: String, onRelease: @escaping @Sendable () -> Void) throws(SystemError) {
        let lock = try HoldLock(path: path)
        guard let fd = FileDescriptor(returnedBy: inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))) else {
            throw SystemError("inotify_init1")
        }
        guard inotify_add_watch(fd.rawValue, path, UInt32(IN_CLOSE_NOWRITE | IN_CLOSE_WRITE)) >= 0 else {
            throw SystemError("inotify_add_watch \(path)")
        }
        self.lock = lock
        watch = DescriptorWatch(fd, label: "rcagent.hold-watch") { fd in
            // Drain the events; what they say is only "look again".
            var buffer = [UInt8](repeating: 0, count: 4096)
            while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
            if (try? lock.isHeld()) == false { onRelease() }
        }
    }

    /// The holds now, judged by `policy` at `now`.
    func verdict(_ policy: HoldPolicy, at now: Timestamp) -> HoldPolicy.Verdict {
        guard (try? lock.isHeld()) == true else { return .free }
        let holds = lock.holders()
        // Held, though /proc/locks did not say by whom (another pid namespace): held, limit unknown.
        return holds.isEmpty ? .held(until: nil) : policy.verdict(holds, at: now)
    }

    func stop() { watch.stop() }

    deinit { watch.stop() }
}
