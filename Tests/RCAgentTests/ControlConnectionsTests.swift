import Glibc
import Testing

@testable import RCAgent

/// `ControlConnections`, the control server's slots: the owner's reserve, who a privileged peer
/// evicts when every slot is taken (and who never), the watcher limits, and freed slots. Each
/// connection is one end of a real socket pair, so an eviction shows as the end of stream the
/// victim's thread would read.
@Suite struct ControlConnectionsTests {
    /// Socket pairs, closed when the test ends.
    private final class Sockets {
        private var descriptors: [Int32] = []

        /// The server's end of a new connection (the client's end stays open, unread).
        func connection() -> Int32 {
            var pair: [Int32] = [0, 0]
            precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
            descriptors += pair
            return pair[0]
        }

        deinit { for fd in descriptors { close(fd) } }
    }

    /// Whether `fd`'s reading side was shut down (an eviction): a read ends at once instead of
    /// finding nothing yet.
    private func wasShutDown(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) == 0
    }

    private func admitted(_ admission: ControlConnections.Admission) -> Int? {
        if case let .admitted(id) = admission { id } else { nil }
    }

    private func refusal(_ admission: ControlConnections.Admission) -> String? {
        if case let .refused(reason) = admission { reason } else { nil }
    }

    @Test func otherPeersLeaveTheReserveToThePrivileged() throws {
        let sockets = Sockets()
        let slots = ControlConnections(capacity: 4, reserve: 2, watcherCapacity: 2, watcherReserve: 1)
        #expect(admitted(slots.admit(sockets.connection(), privileged: false)) != nil)
        #expect(admitted(slots.admit(sockets.connection(), privileged: false)) != nil)
        let refused = refusal(slots.admit(sockets.connection(), privileged: false))
        #expect(refused == "too many connections (2 of 4 may be taken by peers that cannot change state); try again")
        let owner = [sockets.connection(), sockets.connection()]
        #expect(admitted(slots.admit(owner[0], privileged: true)) != nil)
        #expect(admitted(slots.admit(owner[1], privileged: true)) != nil)
        #expect(!owner.contains(where: wasShutDown), "the reserve was free: nobody evicted")
    }

    @Test func otherPeersNeverEvictAnyone() throws {
        let sockets = Sockets()
        let slots = ControlConnections(capacity: 3, reserve: 1, watcherCapacity: 2, watcherReserve: 0)
        let held = [sockets.connection(), sockets.connection(), sockets.connection()]
        #expect(admitted(slots.admit(held[0], privileged: false)) != nil)
        #expect(admitted(slots.admit(held[1], privileged: true)) != nil)
        #expect(admitted(slots.admit(held[2], privileged: true)) != nil)
        // One peer of theirs in three slots, all taken by idle connections: still refused.
        #expect(refusal(slots.admit(sockets.connection(), privileged: false)) == "too many connections (3); try again")
        #expect(!held.contains(where: wasShutDown))
    }

    @Test func thePrivilegedEvictOtherPeersMidLineFirstThenIdleThenNewest() throws {
        let sockets = Sockets()
        let slots = ControlConnections(capacity: 5, reserve: 0, watcherCapacity: 5, watcherReserve: 0)
        // Admitted in this order: a privileged idle one, a peer idle (older), a peer idle (newer),
        // a peer mid-line, a privileged mid-line.
        var fds: [String: Int32] = [:]
        var ids: [String: Int] = [:]
        for (name, privileged, phase) in [
            ("ownerIdle", true, ControlConnections.Phase.idle), ("olderIdle", false, .idle),
            ("newerIdle", false, .idle), ("reading", false, .reading), ("ownerReading", true, .reading),
        ] {
            let fd = sockets.connection()
            let id = try #require(admitted(slots.admit(fd, privileged: privileged)))
            slots.enter(id, phase)
            (fds[name], ids[name]) = (fd, id)
        }
        var evicted: [String] = []
        for _ in 0..<5 {
            let id = try #require(admitted(slots.admit(sockets.connection(), privileged: true)))
            slots.enter(id, .handling)  // the newcomers are being answered: never evicted
            let victims = fds.filter { !evicted.contains($0.key) && wasShutDown($0.value) }.map(\.key)
            #expect(victims.count == 1, "one eviction per admission: \(victims)")
            evicted += victims
        }
        #expect(evicted == ["reading", "newerIdle", "olderIdle", "ownerReading", "ownerIdle"])
        for (name, id) in ids { #expect(slots.wasEvicted(id), "\(name)") }
    }

    @Test func aConnectionBeingAnsweredOrWatchingIsNeverEvicted() throws {
        let sockets = Sockets()
        let slots = ControlConnections(capacity: 2, reserve: 0, watcherCapacity: 2, watcherReserve: 0)
        let answering = sockets.connection()
        let watching = sockets.connection()
        let first = try #require(admitted(slots.admit(answering, privileged: false)))
        slots.enter(first, .handling)
        let second = try #require(admitted(slots.admit(watching, privileged: false)))
        #expect(slots.startWatching(second) == nil)
        #expect(refusal(slots.admit(sockets.connection(), privileged: true)) == "too many connections (2); try again")
        #expect(!wasShutDown(answering) && !wasShutDown(watching))
        #expect(!slots.wasEvicted(first) && !slots.wasEvicted(second))
    }

    @Test func anEvictedConnectionNoLongerCountsAndARemovedOneFreesItsSlot() throws {
        let sockets = Sockets()
        let slots = ControlConnections(capacity: 1, reserve: 0, watcherCapacity: 1, watcherReserve: 0)
        let peer = try #require(admitted(slots.admit(sockets.connection(), privileged: false)))
        let owner = try #require(admitted(slots.admit(sockets.connection(), privileged: true)))
        #expect(slots.wasEvicted(peer) && !slots.wasEvicted(owner))
        // The victim is still in the table until its thread removes it, yet takes no slot: the
        // next privileged peer evicts the owner's idle connection, not the victim again.
        let next = try #require(admitted(slots.admit(sockets.connection(), privileged: true)))
        #expect(slots.wasEvicted(owner))
        slots.enter(next, .handling)
        slots.remove(peer)
        slots.remove(owner)
        #expect(refusal(slots.admit(sockets.connection(), privileged: false)) != nil, "the handled one holds the slot")
        slots.remove(next)
        #expect(admitted(slots.admit(sockets.connection(), privileged: false)) != nil)
        #expect(!slots.wasEvicted(peer), "a removed connection is forgotten")
    }

    @Test func watchersHaveTheirOwnLimitAndReserve() throws {
        let sockets = Sockets()
        let slots = ControlConnections(capacity: 8, reserve: 0, watcherCapacity: 3, watcherReserve: 1)
        var peers: [Int] = []
        for _ in 0..<3 { peers.append(try #require(admitted(slots.admit(sockets.connection(), privileged: false)))) }
        #expect(slots.startWatching(peers[0]) == nil)
        #expect(slots.startWatching(peers[1]) == nil)
        #expect(
            slots.startWatching(peers[2])
                == "too many watchers (2 of 3 may be taken by peers that cannot change state); try again")
        let owner = try #require(admitted(slots.admit(sockets.connection(), privileged: true)))
        #expect(slots.startWatching(owner) == nil)
        let another = try #require(admitted(slots.admit(sockets.connection(), privileged: true)))
        #expect(slots.startWatching(another) == "too many watchers (3); try again")
        // A watcher that leaves frees its place.
        slots.remove(peers[0])
        #expect(slots.startWatching(peers[2]) == nil)
        #expect(slots.startWatching(peers[0]) == "the connection is closing")
    }
}
