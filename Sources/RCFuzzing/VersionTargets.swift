import RCCore

/// App versions and update offers: dotted and Debian versions, dpkg's status file,
/// update values and their ISO 8601 deadlines.
enum VersionTargets {
    static let all = [versions, dpkgStatus, updateOffer, timestamp]

    static let dottedReferences = ["0.0.0", "1.2.3", "1.2.3.0", "1.2.3.1", "1.2.10", "10.0.0", "01.2.3"]
    static let debianReferences = ["0", "1.0", "1.0~rc1", "1.0-1", "1:0.9", "1.0+b1", "1.00", "1.0-1~bpo1", "2:1"]

    /// `DottedVersion` and `DebianVersion`: each line of the input is a version.
    static let versions = FuzzTarget(
        "versions", checkVersions,
        """
        one version per line, dotted and debian: errors name origin and value; comparison among parsed and \
        reference versions is reflexive, antisymmetric, total and transitive; equivalent forms compare equal
        """)

    private static func checkVersions(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        let lines = text(bytes).split(separator: "\n", omittingEmptySubsequences: false).prefix(4).map(String.init)
        var dotted = dottedReferences.map { try! DottedVersion($0, origin: "reference") }
        var debian = debianReferences.map { try! DebianVersion($0, origin: "reference") }
        var accepted = false
        for line in lines {
            switch Result(catching: { () throws(VersionError) in try DottedVersion(line, origin: "fuzz") }) {
            case let .success(version):
                accepted = true
                try check.require(version.parts.count == 4, "\(line) has \(version.parts.count) parts")
                let canonical = version.parts.map(String.init).joined(separator: ".")
                try check.require(
                    (try? DottedVersion(canonical, origin: "canonical")) == version, "\(line) != \(canonical)")
                try check.require(
                    (try? AppVersion(line, scheme: .dotted, origin: "fuzz")).map { !($0 < .dotted(version)) } == true,
                    "AppVersion disagrees")
                dotted.append(version)
            case let .failure(error):
                try check.requireNamed(error, prefix: "fuzz: invalid version \"\(line)\": ")
            }
            switch Result(catching: { () throws(VersionError) in try DebianVersion(line, origin: "fuzz") }) {
            case let .success(version):
                accepted = true
                let trimmed = String(line.trimmingSpaces())
                if !trimmed.contains(":") {
                    let withEpoch = try? DebianVersion("0:" + trimmed, origin: "epoch")
                    try check.require(withEpoch == version, "\(line) != 0:\(trimmed)")
                }
                debian.append(version)
            case let .failure(error):
                try check.requireNamed(error, prefix: "fuzz: invalid version \"\(line)\": ")
            }
        }
        try requireTotalOrder(dotted, check)
        try requireTotalOrder(debian, check)
        return accepted ? .accepted : .rejected
    }

    /// dpkg's status file: the first line of the input is the package name, the rest the file.
    static let dpkgStatus = FuzzTarget(
        "dpkg-status", checkDpkgStatus,
        """
        package name line + dpkg status text: errors name the package; a found version is one trimmed line \
        of the status text
        """)

    private static func checkDpkgStatus(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
        let package = text(Array(bytes[..<newline]))
        let status = Array(bytes[min(newline + 1, bytes.endIndex)...])
        let version: String
        do { version = try DpkgStatus.installedVersion(of: package, statusText: status) } catch {
            try check.require(
                contains(error.description, "package \(package) "), "error \"\(error)\" does not name the package")
            return .rejected
        }
        try check.require(!version.contains("\n") && version.trimmingSpaces() == version, "version \(version)")
        try check.require(contains(text(status), version), "version \(version) is not in the status text")
        return .accepted
    }

    /// `UpdateOffer.parse` and the update check built on it (installed 1.2.3, dotted).
    static let updateOffer = FuzzTarget(
        "update-offer", checkUpdateOffer,
        """
        update key value: errors name the key; an offer has a version and a download, its deadline reads \
        back; the update check never reports an update that is not newer
        """)

    private static func checkUpdateOffer(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        let key = "linux_required_update"
        let value = text(bytes)
        let offer: UpdateOffer?
        do { offer = try UpdateOffer.parse(value, key: key) } catch {
            try check.requireNamed(error, prefix: key + ": ")
            return .rejected
        }
        guard let offer else {
            try check.require(value.trimmingSpaces().isEmpty, "a non-empty value offers nothing")
            return .rejected
        }
        try check.require(!offer.version.isEmpty && !offer.download.isEmpty, "an offer without version or download")
        if let deadline = offer.deadline, case let .string(text)? = (try? JSONValue.parse(value))?["deadline"] {
            try check.require(Timestamp(iso8601: text) == deadline, "deadline \(text) reads differently")
        }
        let installed = try! DottedVersion("1.2.3", origin: "installed")
        let now = Timestamp(milliseconds: 1_800_000_000_000)
        for kind in [UpdateKind.required, .recommended] {
            let verdict: UpdateVerdict
            do {
                verdict = try UpdateChecker(scheme: .dotted).check(
                    installed: "1.2.3", installedOrigin: "installed", offers: [(kind, key, value)], now: now)
            } catch {
                try check.require(
                    contains(error.description, key) && contains(error.description, offer.version),
                    "check error \"\(error)\" names neither key nor version")
                continue
            }
            let target = try? DottedVersion(offer.version, origin: "offer")
            try check.require(
                (verdict.result == .none) == !(target.map { installed < $0 } ?? false),
                "verdict \(verdict.result) for \(offer.version) over 1.2.3")
        }
        return .accepted
    }

    /// `Timestamp(iso8601:)`: the deadlines of update offers.
    static let timestamp = FuzzTarget(
        "timestamp", checkTimestamp,
        """
        ISO 8601 text: a parsed time formats to text that reads back as the same second; canonical UTC text \
        (YYYY-MM-DDTHH:MM:SSZ) formats back to itself, so impossible dates are refused
        """)

    private static func checkTimestamp(_ check: Checker, _ bytes: [UInt8]) throws(PropertyViolation) -> FuzzOutcome {
        let value = text(bytes)
        guard let time = Timestamp(iso8601: value) else { return .rejected }
        let formatted = time.iso8601
        let again = Timestamp(iso8601: formatted)
        try check.require(
            again?.milliseconds == time.milliseconds.floorDivided(1_000) * 1_000,
            "\(value) formats as \(formatted), which reads back as \(String(describing: again))")
        let canonical = value.utf8.count == 20 && value.hasSuffix("Z") && Array(value.utf8)[10] == UInt8(ascii: "T")
        let leapSecond = value.utf8.count == 20 && value.dropFirst(17).hasPrefix("60")
        if canonical && !leapSecond {
            try check.require(formatted == value, "\(value) formats as \(formatted)")
        }
        return .accepted
    }

    /// Reflexive, antisymmetric, total (exactly one of <, >, ==) and transitive: each pair is compared
    /// once, then transitivity is checked on the table of results.
    private static func requireTotalOrder<V: Comparable & CustomStringConvertible>(_ versions: [V], _ check: Checker)
        throws(PropertyViolation)
    {
        let n = versions.count
        var order = [[Int]](repeating: [Int](repeating: 0, count: n), count: n)
        for i in 0..<n {
            for j in 0..<n {
                let (a, b) = (versions[i], versions[j])
                let less = a < b
                let greater = b < a
                let equal = a == b
                try check.require(
                    [less, greater, equal].filter { $0 }.count == 1,
                    "\(a) and \(b): <, >, == are \(less), \(greater), \(equal)")
                order[i][j] = less ? -1 : greater ? 1 : 0
            }
            try check.require(order[i][i] == 0, "\(versions[i]) is not equal to itself")
        }
        for i in 0..<n {
            for j in 0..<n {
                try check.require(
                    order[i][j] == -order[j][i], "\(versions[i]) and \(versions[j]) are not antisymmetric")
                for k in 0..<n where order[i][j] <= 0 && order[j][k] <= 0 {
                    try check.require(
                        order[i][k] <= 0,
                        "\(versions[i]) <= \(versions[j]) <= \(versions[k]) but not the first <= the last")
                }
            }
        }
    }
}

extension Int64 {
    fileprivate func floorDivided(_ d: Int64) -> Int64 {
        let q = self / d
        return (self % d != 0 && (self < 0) != (d < 0)) ? q - 1 : q
    }
}
