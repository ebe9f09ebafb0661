// swift-tools-version:6.1
import PackageDescription
let package = Package(name: "AppleCheck", targets: [
    .target(name: "Compression", linkerSettings: [.linkedLibrary("lzma")]),
    .target(name: "Check", dependencies: ["Compression"]),
    .executableTarget(name: "Run", dependencies: ["Check"]),
])
