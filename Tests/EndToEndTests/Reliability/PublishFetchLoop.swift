import Foundation
import Glibc

/// The loop the kill -9 suites kill the daemon in: publishes whole documents (written aside,
/// renamed into place) and fetches each with a forced fetch on the control socket, then runs
/// `afterFetch` (an activation, a rollback; `false` when the daemon did not answer), until the
/// daemon goes away.
final class PublishFetchLoop: @unchecked Sendable {
    private let done = NSCondition()
    private var finished = false
    private var last: Int

    init(
        _ sandbox: Sandbox, firstVersion: Int, keys: Int,
        afterFetch: @escaping @Sendable (SocketClient, _ version: Int) -> Bool = { _, _ in true }
    ) {
        last = firstVersion - 1
        let remote = sandbox.remotePath
        let socket = sandbox.socketPath
        Thread { [self] in
            run(remote: remote, socket: socket, firstVersion: firstVersion, keys: keys, afterFetch: afterFetch)
            done.withLock {
                finished = true
                done.broadcast()
            }
        }.start()
    }

    private func run(
        remote: String, socket: String, firstVersion: Int, keys: Int, afterFetch: (SocketClient, Int) -> Bool
    ) {
        guard let client = try? SocketClient(path: socket) else { return }
        for version in firstVersion... {
            let document = Sandbox.document(version: version, keys: keys)
            guard (try? document.write(toFile: remote + ".new", atomically: false, encoding: .utf8)) != nil,
                rename(remote + ".new", remote) == 0
            else { return }
            done.withLock { last = version }
            guard client.request(#"{"op":"fetch","force":true,"wait":true}"#) != nil, afterFetch(client, version)
            else { return }
        }
    }

    /// Waits for the loop to notice the daemon is gone; returns the last version it published.
    func finish() -> Int {
        done.withLock {
            while !finished { done.wait() }
            return last
        }
    }
}
