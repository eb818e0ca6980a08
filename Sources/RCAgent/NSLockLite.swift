import Glibc

/// A pthread mutex, owned: initialized in `init`, destroyed in `deinit`. Kept only for HookRunner,
/// which another change moves to Synchronization's `Mutex` (the lock every other type uses); delete
/// this file with that change.
final class NSLockLite: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
