import Glibc
import Synchronization

/// The control server's connection slots, and who may take the last ones.
///
/// Every connection holds a slot (and a thread) from accept to close. So that no crowd of clients
/// can lock the owner out, a peer is classed once, at accept, by the credentials the kernel took at
/// `connect()`: *privileged* (root, the daemon's user, a `SocketGroup` member: whoever may change
/// state) or not. Then:
/// - there are at most ``capacity`` connections, of which other peers hold at most
///   `capacity - reserve`;
/// - at most ``watcherCapacity`` of them watch, other peers' at most `watcherCapacity - watcherReserve`;
/// - a privileged peer that finds every slot taken evicts a connection that waits on its client:
///   other peers' before privileged ones, one in the middle of a line (the shape of a slow client)
///   before one idle between requests, the newest first (a connection that has long been used, like a
///   monitor's, is likelier to be wanted than one of a crowd that just came in). A connection whose
///   request is being answered, or that watches, is never evicted.
/// Slow clients cannot hold a slot for long either: the server cuts a line that is not complete
/// within ``ControlServer/lineDeadline`` of its first byte.
final class ControlConnections: Sendable {
    enum Phase: Sendable { case idle, reading, handling, watching }

    enum Admission: Sendable {
        case admitted(Int)
        case refused(String)
    }

    let capacity: Int
    let reserve: Int
    let watcherCapacity: Int
    let watcherReserve: Int

    private struct Entry {
        let fd: Int32
        let privileged: Bool
        var phase: Phase = .idle
        var evicted = false
    }

    private struct Table {
        var entries: [Int: Entry] = [:]
        var nextId = 0
    }

    private let table = Mutex(Table())

    init(capacity: Int, reserve: Int, watcherCapacity: Int, watcherReserve: Int) {
        self.capacity = capacity
        self.reserve = reserve
        self.watcherCapacity = watcherCapacity
        self.watcherReserve = watcherReserve
    }

    /// Gives the new connection `fd` a slot, evicting another if it must and may.
    func admit(_ fd: Int32, privileged: Bool) -> Admission {
        table.withLock { table in
            let live = table.entries.filter { !$0.value.evicted }
            if !privileged && live.values.filter({ !$0.privileged }).count >= capacity - reserve {
                return .refused(
                    "too many connections (\(capacity - reserve) of \(capacity) may be taken by peers that cannot change state); try again"
                )
            }
            if live.count >= capacity {
                let evictable = live.filter { $0.value.phase == .idle || $0.value.phase == .reading }
                guard privileged,
                    let victim = evictable.min(by: { Self.evictionOrder($0) < Self.evictionOrder($1) })
                else {
                    return .refused("too many connections (\(capacity)); try again")
                }
                table.entries[victim.key]?.evicted = true
                // Wakes the victim's thread in poll()/recv() with end of stream; it answers `busy` and
                // closes. Done under the lock: the victim closes its descriptor only after leaving the
                // table, so this cannot hit a reused descriptor number.
                shutdown(victim.value.fd, Int32(SHUT_RD))
            }
            let id = table.nextId
            table.nextId += 1
            table.entries[id] = Entry(fd: fd, privileged: privileged)
            return .admitted(id)
        }
    }

    /// Smallest first: other peers', mid-line, newest.
    private static func evictionOrder(_ entry: (key: Int, value: Entry)) -> (Int, Int, Int) {
        (entry.value.privileged ? 1 : 0, entry.value.phase == .reading ? 0 : 1, -entry.key)
    }

    /// Records what connection `id` is doing (only idle and reading connections can be evicted).
    func enter(_ id: Int, _ phase: Phase) {
        table.withLock { $0.entries[id]?.phase = phase }
    }

    /// Makes connection `id` a watcher, or says why not.
    func startWatching(_ id: Int) -> String? {
        table.withLock { table in
            guard let entry = table.entries[id] else { return "the connection is closing" }
            let watchers = table.entries.values.filter { $0.phase == .watching }
            if watchers.count >= watcherCapacity {
                return "too many watchers (\(watcherCapacity)); try again"
            }
            if !entry.privileged
                && watchers.filter({ !$0.privileged }).count >= watcherCapacity - watcherReserve
            {
                return
                    "too many watchers (\(watcherCapacity - watcherReserve) of \(watcherCapacity) may be taken by peers that cannot change state); try again"
            }
            table.entries[id]?.phase = .watching
            return nil
        }
    }

    /// Whether connection `id` was evicted to make room for a privileged peer.
    func wasEvicted(_ id: Int) -> Bool {
        table.withLock { $0.entries[id]?.evicted ?? false }
    }

    /// Frees the slot. Call before closing the descriptor (see ``admit(_:privileged:)``).
    func remove(_ id: Int) {
        table.withLock { _ = $0.entries.removeValue(forKey: id) }
    }
}
