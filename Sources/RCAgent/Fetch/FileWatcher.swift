@preconcurrency import Dispatch
import Glibc
import RCCore
import RCSystem

/// Turns changes of one file into calls of `onChange`. It watches the file's directory with
/// inotify, so editors that write a new file and rename it over the old one are seen too; where
/// inotify is unavailable it polls the file's size, time and inode every two seconds.
final class FileWatcher: @unchecked Sendable {
    private let path: String
    private let onChange: @Sendable () -> Void
    private let queue = DispatchQueue(label: "rcagent.file-watcher")
    private var inotify: DescriptorWatch?
    private var timer: (any DispatchSourceTimer)?
    private var lastSeen: FileIdentity?

    init(path: String, onChange: @escaping @Sendable () -> Void) {
        self.path = path
        self.onChange = onChange
    }

    /// Starts watching; returns how (for the log).
    func start() -> String {
        let slash = path.lastIndex(of: "/")!
        let directory = slash == path.startIndex ? "/" : String(path[..<slash])
        let name = String(path[path.index(after: slash)...])
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_ATTRIB)
        guard let fd = FileDescriptor(returnedBy: inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))) else {
            return startPolling(because: errno)
        }
        guard inotify_add_watch(fd.rawValue, directory, mask) >= 0 else {
            let failure = errno  // taken before the descriptor closes
            fd.close()
            return startPolling(because: failure)
        }
        let onChange = onChange
        inotify = DescriptorWatch(fd, label: "rcagent.file-watcher.inotify") { fd in
            if Self.drain(fd, name: name) { onChange() }
        }
        return "inotify on \(directory)"
    }

    /// Polls the file every two seconds, inotify having failed with `failure`; returns how (for the log).
    private func startPolling(because failure: Int32) -> String {
        lastSeen = FileIdentity(path: path)
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 2, repeating: 2)
        timer.setEventHandler { [self] in
            let now = FileIdentity(path: path)
            if now != lastSeen {
                lastSeen = now
                onChange()
            }
        }
        timer.resume()
        self.timer = timer
        return "polling every 2s (inotify unavailable: \(String(cString: strerror(failure))))"
    }

    /// Stops watching; no `onChange` call starts after it returns.
    func stop() {
        inotify?.stop()
        queue.sync { timer?.cancel() }
    }

    /// Reads every queued event; whether one names the watched file.
    private static func drain(_ fd: Int32, name: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 8192)
        var changed = false
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= n {
                let (length, eventName) = buffer.withUnsafeBytes { raw -> (Int, String) in
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let start = offset + MemoryLayout<inotify_event>.size
                    let bytes = raw[start..<(start + Int(event.len))].prefix { $0 != 0 }
                    return (Int(event.len), String(decoding: bytes, as: UTF8.self))
                }
                if eventName == name { changed = true }
                offset += MemoryLayout<inotify_event>.size + length
            }
        }
        return changed
    }
}

/// What polling compares: size, modification time and inode.
private struct FileIdentity: Equatable {
    var size: Int64 = -1
    var modified: Int = 0
    var modifiedNanoseconds: Int = 0
    var inode: UInt64 = 0

    init(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        size = Int64(info.st_size)
        modified = info.st_mtim.tv_sec
        modifiedNanoseconds = info.st_mtim.tv_nsec
        inode = UInt64(info.st_ino)
    }
}
