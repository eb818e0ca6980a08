// swift-tools-version:6.0
// rcagent: remote configuration for Linux devices.
//
// Layering (the dependency graph is also the startup budget):
//   C* system libraries → RCCore (pure domain: values, documents, config, protocol; no system calls)
//     → RCSystem (the OS edge: descriptors, files, Unix sockets, threads, executors, netlink, the clock,
//        the environment; reading config and dpkg from disk)
//     → RCStore (SQLite state) → RCAgent (daemon) / RCClient (CLI)
//   network modules, shared by the daemon and the operator tool, none of them knowing either:
//     RCHTTP (libcurl) → RCFirebase (installations, fetch, realtime), RCGoogle (service accounts, the Remote
//     Config and FCM admin APIs; it reads keys with RCSigning's libcrypto helpers); RCMQTT (libmosquitto)
//   RCService (journald log lines, sd_notify, the signal-and-stop lifecycle) for both long-running programs.
//   RCAgent → RCStore, RCTemplate, RCSigning, RCHTTP, RCFirebase, RCMQTT, RCService; inside it the agent actor
//     owns the one writer of the state (StateWriter, with the status board that pushes a typed snapshot to its
//     subscribers), the fetch loop and safe activation (Activation/Activator); the report, the MQTT channel and
//     the realtime stream see it only through narrow protocols (Agent/ChannelInterfaces.swift), so each is
//     unit-tested against a fake;
//   RCSigning (DSSE envelopes, Ed25519 via libcrypto) → RCCore: the daemon verifies, rcadmin signs;
//   RCAdmin (rcadmin) → RCHTTP, RCFirebase, RCGoogle, RCMQTT, RCService, RCSigning, RCTemplate, never RCAgent;
//     its fleet exporter serves HTTP with libmicrohttpd (CMicroHTTPD), loaded on first use like the others.
// `rcagent` → RCClient → RCStore + RCSystem + RCCore must never reach libcurl, libmosquitto or full Foundation.
//
// rcagent and rcagentd are one executable, `rcagent`, that runs the daemon when called as `rcagentd` (a
// link to it): one copy of the Swift runtime on the device instead of two. So that the CLI still starts
// with only libc and libsqlite3 mapped, no executable links libcurl, libmosquitto, libcrypto, libpcre2,
// libmicrohttpd (rcadmin's fleet exporter) or libsystemd: their C modules have no `link`, and CLazyLibraries defines the functions used from them as
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
        .systemLibrary(name: "CMicroHTTPD", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CLinux"),
        // The six libraries above, loaded on first use or written out (see the top of this file). No
        // pkgConfig for them: its --libs would link them again.
        .target(name: "CLazyLibraries"),

        // Pure domain: no system calls (no Glibc), so every rule in it is a plain value to test.
        .target(name: "RCCore"),
        .target(name: "RCSystem", dependencies: ["RCCore"]),
        .target(name: "RCStore", dependencies: ["RCCore", "RCSystem", "CSQLite", "CLinux"]),
        .target(name: "RCHTTP", dependencies: ["RCCore", "RCSystem", "CCurl", "CLazyLibraries"]),
        .target(name: "RCMQTT", dependencies: ["RCCore", "RCSystem", "CMosquitto", "CLazyLibraries"]),
        .target(name: "RCFirebase", dependencies: ["RCCore", "RCSystem", "RCHTTP"]),
        // What a long-running systemd service needs: journald-prefixed log lines and sd_notify.
        .target(name: "RCService", dependencies: ["RCCore", "RCSystem", "CSystemd", "CLazyLibraries"]),
        .target(
            name: "RCGoogle", dependencies: ["RCCore", "RCSystem", "RCHTTP", "RCSigning", "CCrypto", "CLazyLibraries"]),
        .target(
            name: "RCAgent",
            dependencies: [
                "RCCore", "RCSystem", "RCStore", "RCTemplate", "RCSigning", "RCHTTP", "RCFirebase", "RCMQTT",
                "RCService", "CLinux",
            ]),
        .target(name: "RCClient", dependencies: ["RCCore", "RCSystem", "RCStore", "CLazyLibraries"]),
        .target(
            name: "RCTemplate",
            dependencies: ["RCCore", "RCSystem", "RCService", "CCrypto", "CPCRE2", "CLazyLibraries"]),
        // Signed documents (DSSE envelopes, Ed25519 with libcrypto): the daemon verifies, rcadmin signs.
        .target(name: "RCSigning", dependencies: ["RCCore", "RCSystem", "CCrypto", "CLazyLibraries"]),
        .target(
            name: "RCAdmin",
            dependencies: [
                "RCCore", "RCSystem", "RCMQTT", "RCHTTP", "RCFirebase", "RCGoogle", "RCService", "RCSigning",
                "RCTemplate", "CMicroHTTPD", "CLazyLibraries",
            ]),

        // rcagent and, called as rcagentd, the daemon (main.swift chooses by the name it is called by).
        .executableTarget(
            name: "rcagent", dependencies: ["RCClient", "RCAgent", "CLinux"],
            // Startup dominates `rcagent get` (BENCHMARKS.md): a position-dependent executable skips
            // ~35,000 load-time relocations, about 0.4 ms of a 3 ms run. The daemon, the same file, is
            // position-dependent too (BENCHMARKS.md, issue 20, measures the alternative).
            // --no-export-dynamic (the driver passes -export-dynamic): the executable's ~3,900 symbols
            // stay out of its dynamic symbol table, which the loader and dladdr(3) search at every
            // start, and out of the global scope, where the CLazyLibraries wrappers would share names
            // with the libraries they load.
            linkerSettings: [
                .unsafeFlags(
                    ["-Xlinker", "-no-pie", "-Xlinker", "--no-export-dynamic"], .when(configuration: .release))
            ]),
        .executableTarget(name: "rcadmin", dependencies: ["RCAdmin", "CLinux"]),

        // Parser fuzz targets (`make fuzz`; the corpus run is a Reliability suite of EndToEndTests).
        .target(
            name: "RCFuzzing",
            dependencies: ["RCCore", "RCSystem", "RCTemplate", "RCSigning", "RCHTTP", "RCFirebase", "RCService"]),
        .executableTarget(name: "rcfuzz", dependencies: ["RCFuzzing"]),

        .target(name: "TestSupport", dependencies: ["CLinux", "RCCore", "RCSystem"], path: "Tests/TestSupport"),
        .testTarget(name: "RCCoreTests", dependencies: ["RCCore", "RCSystem", "TestSupport"]),
        .testTarget(name: "RCSystemTests", dependencies: ["RCSystem", "RCCore"]),
        .testTarget(name: "RCStoreTests", dependencies: ["RCStore", "RCCore", "RCSystem", "TestSupport"]),
        .testTarget(name: "RCTemplateTests", dependencies: ["RCTemplate", "RCCore", "RCSystem"]),
        .testTarget(name: "RCSigningTests", dependencies: ["RCSigning", "RCCore", "RCSystem", "TestSupport"]),
        .testTarget(
            name: "RCAgentTests",
            dependencies: [
                "RCAgent", "RCStore", "RCCore", "RCSystem", "RCMQTT", "RCService", "RCTemplate", "RCSigning",
                "TestSupport",
            ]),
        .testTarget(name: "RCAdminTests", dependencies: ["RCAdmin", "RCCore", "RCSystem", "RCMQTT", "TestSupport"]),
        .testTarget(
            name: "RCNetworkTests",
            dependencies: [
                "RCHTTP", "RCFirebase", "RCGoogle", "RCMQTT", "RCCore", "RCSystem", "CLazyLibraries", "TestSupport",
            ]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "rcagent", "rcadmin", "RCStore", "RCCore", "RCSystem", "RCService", "RCFuzzing", "TestSupport",
            ]),
    ]
)
