import Glibc
import RCCore
import RCSigning
import RCSystem

/// `rcadmin key generate`: an Ed25519 key pair for signed documents (issue 28).
enum KeyCommands {
    static let generate = AdminCommand(
        words: ["key", "generate"], synopsis: "--out FILE",
        help: """
            Makes an Ed25519 key pair for signed documents: the private key in FILE (PEM, mode 0600)
            and the public key in FILE.pub (PEM, mode 0644), which devices trust with TrustedKeys=.
            Never writes over an existing file. Keep FILE off the devices and out of the repository
            (a CI secret, a hardware token's export, an offline machine).
            """,
        options: [.value("out", "FILE")], arguments: 0...0
    ) { options, _ throws(AdminFailure) in
        guard let out = options.value("out"), !out.isEmpty else { throw .usage("key generate needs --out FILE") }
        let publicPath = out + ".pub"
        for path in [out, publicPath] where FileBytes.exists(path) {
            throw .failure("\(TextEscaping.terminal(path)) exists; key generate never writes over a file")
        }
        let key: Ed25519PrivateKey
        let privatePEM: [UInt8]
        let publicPEM: [UInt8]
        do throws(SigningError) {
            key = try Ed25519PrivateKey()
            privatePEM = try key.privatePEM()
            publicPEM = try key.publicPEM()
        } catch { throw .failure(error.description) }
        try create(out, privatePEM, mode: 0o600)
        do throws(AdminFailure) { try create(publicPath, publicPEM, mode: 0o644) } catch {
            unlink(out)  // half a pair is no pair
            throw error
        }
        let keyID: String
        do throws(SigningError) { keyID = try key.publicKey().keyID } catch { throw .failure(error.description) }
        Output.note(
            "Wrote the private key to \(TextEscaping.terminal(out)) (0600) and the public key to "
                + "\(TextEscaping.terminal(publicPath)); key id \(keyID)")
    }

    /// Creates `path` (never over an existing file or through a link), writes `bytes` and fsyncs it.
    private static func create(_ path: String, _ bytes: [UInt8], mode: mode_t) throws(AdminFailure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else {
            throw .failure("cannot create \(TextEscaping.terminal(path)): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        // The mode asked for, whatever the umask: a private key must not be readable by others.
        guard fchmod(fd, mode) == 0, Posix.writeAll(fd, bytes), fsync(fd) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(path)
            throw .failure("cannot write \(TextEscaping.terminal(path)): \(reason)")
        }
    }
}
