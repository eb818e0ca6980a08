// swift-tools-version:6.0
// rcagent: remote configuration for Linux devices.
//
// Layering (the dependency graph is also the startup budget):
//   C* system libraries → RCCore (pure domain) → RCStore (SQLite state) → RCAgent (daemon) / RCClient (CLI)
//   network modules, shared by the daemon and the operator tool, none of them knowing either:
//     RCHTTP (libcurl) → RCFirebase (installations, fetch, realtime), RCGoogle (service accounts, the Remote
//     Config and FCM admin APIs); RCMQTT (libmosquitto)
//   RCService (journald log lines, sd_notify, the signal-and-stop lifecycle) for both long-running programs.
//   RCAgent → RCStore, RCTemplate, RCHTTP, RCFirebase, RCMQTT, RCService;
//   RCSigning (DSSE envelopes, Ed25519 via libcrypto) → RCCore: the daemon verifies, rcadmin signs;
//   RCAgent also → RCSigning;
//   RCAdmin (rcadmin) → RCHTTP, RCFirebase, RCGoogle, RCMQTT, RCService, RCSigning, RCTemplate, never RCAgent.
// `rcagent` → RCClient → RCStore + RCCore must never reach libcurl, libmosquitto or full Foundation.
//
// rcagent and rcagentd are one executable, `rcagent`, that runs the daemon when called as `rcagentd` (a
// link to it): one copy of the Swift runtime on the device instead of two. So that the CLI still starts
// with only libc and libsqlite3 mapped, no executable links libcurl, libmosquitto, libcrypto, libpcre2 or
// libsystemd: their C modules have no `link`, and CLazyLibraries defines the functions used from them as
// wrappers that load the library on first use (and the module that owns each says what needs it), and
// sd_notify and sd_watchdog_enabled as the documented protocol they speak, without libsystemd.
import PackageDescription

let package = Package(
    name: "rcagent",
    products: [
        .executable(name: "rcagent", targets: ["rcagent"]),
        .executable(name: "rcadmin", targets: ["rcadmin"]),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CSystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .systemLibrary(name: "CCrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CPCRE2", providers: [.apt(["libpcre2-dev"])]),
        .systemLibrary(name: "CLinux"),
        // The five libraries above, loaded on first use or written out (see the top of this file). No
        // pkgConfig for them: its --libs would link them again.
        .target(name: "CLazyLibraries"),

        .target(name: "RCCore"),
        .target(name: "RCStore", dependencies: ["RCCore", "CSQLite", "CLinux"]),
        .target(name: "RCHTTP", dependencies: ["RCCore", "CCurl", "CLazyLibraries"]),
        .target(name: "RCMQTT", dependencies: ["RCCore", "CMosquitto", "CLazyLibraries"]),
        .target(name: "RCFirebase", dependencies: ["RCCore", "RCHTTP"]),
        // What a long-running systemd service needs: journald-prefixed log lines and sd_notify.
        .target(name: "RCService", dependencies: ["RCCore", "CSystemd", "CLazyLibraries"]),
        .target(name: "RCGoogle", dependencies: ["RCCore", "RCHTTP", "CCrypto", "CLazyLibraries"]),
        .target(
            name: "RCAgent",
            dependencies: [
                "RCCore", "RCStore", "RCTemplate", "RCSigning", "RCHTTP", "RCFirebase", "RCMQTT", "RCService",
                "CLinux",
            ]),
        .target(name: "RCClient", dependencies: ["RCCore", "RCStore"]),
        .target(name: "RCTemplate", dependencies: ["RCCore", "RCService", "CCrypto", "CPCRE2", "CLazyLibraries"]),
        // Signed documents (DSSE envelopes, Ed25519 with libcrypto): the daemon verifies, rcadmin signs.
        .target(name: "RCSigning", dependencies: ["RCCore", "CCrypto", "CLazyLibraries"]),
        .target(
            name: "RCAdmin",
            dependencies: [
                "RCCore", "RCMQTT", "RCHTTP", "RCFirebase", "RCGoogle", "RCService", "RCSigning", "RCTemplate",
            ]),

        // rcagent and, called as rcagentd, the daemon (main.swift chooses by the name it is called by).
        .executableTarget(
            name: "rcagent", dependencies: ["RCClient", "RCAgent", "CLinux"],
            // Startup dominates `rcagent get` (BENCHMARKS.md): a position-dependent executable skips
            // ~35,000 load-time relocations, about 0.4 ms of a 3 ms run. The daemon, the same file, is
            // position-dependent too (BENCHMARKS.md, issue 20, measures the alternative).
            linkerSettings: [.unsafeFlags(["-Xlinker", "-no-pie"], .when(configuration: .release))]),
        .executableTarget(name: "rcadmin", dependencies: ["RCAdmin", "CLinux"]),

        // Parser fuzz targets (`make fuzz`; the corpus run is a Reliability suite of EndToEndTests).
        .target(
            name: "RCFuzzing",
            dependencies: ["RCCore", "RCTemplate", "RCSigning", "RCHTTP", "RCFirebase", "RCService"]),
        .executableTarget(name: "rcfuzz", dependencies: ["RCFuzzing"]),

        .target(name: "TestSupport", dependencies: ["CLinux", "RCCore"], path: "Tests/TestSupport"),
        .testTarget(name: "RCCoreTests", dependencies: ["RCCore", "TestSupport"]),
        .testTarget(name: "RCStoreTests", dependencies: ["RCStore", "RCCore", "TestSupport"]),
        .testTarget(name: "RCTemplateTests", dependencies: ["RCTemplate", "RCCore"]),
        .testTarget(name: "RCSigningTests", dependencies: ["RCSigning", "RCCore", "TestSupport"]),
        .testTarget(
            name: "RCAgentTests",
            dependencies: [
                "RCAgent", "RCStore", "RCCore", "RCService", "RCTemplate", "RCSigning", "TestSupport",
            ]),
        .testTarget(name: "RCAdminTests", dependencies: ["RCAdmin", "RCCore", "RCMQTT", "TestSupport"]),
        .testTarget(
            name: "RCNetworkTests",
            dependencies: ["RCHTTP", "RCFirebase", "RCGoogle", "RCMQTT", "RCCore", "TestSupport"]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "rcagent", "rcadmin", "RCStore", "RCCore", "RCService", "RCFuzzing", "TestSupport",
            ]),
    ]
)
