// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Reseed",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "Reseed", targets: ["Reseed"]),
        .library(name: "ReseedPackaging", targets: ["ReseedPackaging"]),
        .library(name: "ReseedTesting", targets: ["ReseedTesting"]),
        .executable(name: "reseed", targets: ["reseed"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        // Syscalls Glibc hides without _GNU_SOURCE (copy_file_range, renameat2, FICLONE), and one
        // variadic sqlite3_db_config call Swift cannot make (linked with GRDBSQLite's sqlite3).
        .target(name: "CReseedSystem"),
        // libcurl loaded at run time, for the channel transfers on Linux (see HTTPTransfer).
        .target(name: "CReseedCurl", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        // The system zlib, for compressed seeds (gzip): in every OS, so no C code is vendored.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"])]),
        // The system liblzma, for the xz codec on Linux (Apple platforms decode xz with the Compression framework, and write none).
        .systemLibrary(name: "CLzma", path: "Sources/CLzma", providers: [.apt(["liblzma-dev"])]),
        // The system layer (the swift-nio model: a small public core over an internal system target):
        // the syscall seam, owned descriptors, durable files, the fast copy, locks, blocking threads,
        // the codecs (gzip, xz), the byte-preserving JSON reader, the SQLite file header, and the one shape
        // of a user's error sentence. No seed manifest, store install or channel in it; no descriptor
        // number leaves it.
        .target(
            name: "ReseedSystem",
            dependencies: [
                "CReseedSystem",
                "CZlib",
                .target(name: "CLzma", condition: .when(platforms: [.linux])),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]),
        .target(
            name: "Reseed",
            dependencies: [
                "ReseedSystem",
                "CReseedSystem",
                "CReseedCurl",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]),
        .target(
            name: "ReseedPackaging",
            dependencies: [
                "Reseed",
                "ReseedSystem",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]),
        .target(
            name: "ReseedTesting",
            dependencies: [
                "Reseed",
                "ReseedPackaging",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .executableTarget(
            name: "reseed",
            dependencies: [
                "Reseed",
                "ReseedSystem",
                "ReseedPackaging",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // In-process benchmark figures; run through Benchmarks/run (release build).
        .executableTarget(
            name: "ReseedBenchmarks",
            dependencies: [
                "Reseed", "ReseedPackaging", "ReseedSystem", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/ReseedBenchmarks"),
        // Helpers of Reseed's own tests (a temporary folder, a seeded generator, fuzz failures, the file-system
        // seam's fault plan, a channel sandbox and its loopback server): not a product. It sees Reseed's public
        // and package API only (no @testable import), so the in-process tests' transport lives in ReseedTests.
        .target(
            name: "ReseedTestSupport",
            dependencies: ["ReseedSystem", "Reseed", "ReseedPackaging", "ReseedTesting", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/ReseedTestSupport",
            // The channel server the loopback tests start (python3); run from its place in the source tree.
            exclude: ["channel_server.py"]),
        .testTarget(
            name: "ReseedTests",
            // CZlib: the gzip tests build a deflate stream zlib's own way (a bomb of flushed blocks).
            // Logging: the preferences tests call the file's writer, which takes a Logger; InMemoryLogging:
            // the delta tests read which check an update logged.
            dependencies: [
                "Reseed", "ReseedSystem", "CZlib", "ReseedPackaging", "ReseedTesting", "ReseedTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]),
        .testTarget(
            name: "ReseedPackagingTests",
            dependencies: ["ReseedPackaging", "ReseedSystem", "ReseedTesting", "ReseedTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(
            name: "ReseedTestingTests",
            // Reseed named too, though ReseedTesting brings it: without it an incremental build kept
            // these tests compiled against an older LaunchOutcome layout (a crash copying one).
            dependencies: ["Reseed", "ReseedTesting", "ReseedTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(
            name: "ReseedCLITests",
            dependencies: [
                "reseed", "ReseedTesting", "ReseedTestSupport", "Reseed", "ReseedPackaging", "ReseedSystem",
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
