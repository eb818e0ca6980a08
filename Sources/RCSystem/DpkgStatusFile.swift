import RCCore

extension DpkgStatus {
    /// The version of `package` when dpkg lists it as installed, else an error saying why not.
    public static func installedVersion(of package: String, statusFile: String = defaultPath) throws(UpdateCheckError)
        -> String
    {
        let bytes: [UInt8]
        do {
            guard let read = try FileBytes.read(statusFile, limit: 256 << 20) else {
                throw UpdateCheckError("\(statusFile) does not exist (is this a dpkg system?)")
            }
            bytes = read
        } catch let error as SystemError {
            throw UpdateCheckError("cannot read \(statusFile): \(error)")
        } catch let error as UpdateCheckError {
            throw error
        } catch {
            throw UpdateCheckError("\(error)")
        }
        return try installedVersion(of: package, statusText: bytes)
    }
}
