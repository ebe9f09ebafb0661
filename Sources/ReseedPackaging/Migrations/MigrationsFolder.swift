import Foundation
import Reseed

/// The ordered steps of a `Migrations/` folder.
///
/// Files are `NNNN_description.ext` (at least four digits), applied in numeric
/// order. Dotfiles and a README (any `README*`) are ignored. Rejected, each
/// with the file named: a name that does not match the pattern, an extension
/// other than `sql`, `csv`, `json`, and two steps with the same number.
///
/// ```swift
/// let folder = try MigrationsFolder(at: URL(fileURLWithPath: "Migrations"))
/// for step in folder.steps { print(step.id) }
/// ```
public struct MigrationsFolder: Sendable {
    public var url: URL
    /// The steps, in the order they apply.
    public var steps: [MigrationStep]

    /// Lists and checks the steps in `url`.
    ///
    /// - Throws: ``PackagingError`` (step ``PackagingError/Step/readMigrations``) ``PackagingError/Code/invalidStepName`` or
    ///   ``PackagingError/Code/duplicateStepNumber`` naming the file, or
    ///   ``PackagingError/Code/io`` when the folder cannot be read.
    public init(at url: URL) throws(PackagingError) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: url.path)
        } catch {
            throw PackagingError.io("cannot read the migrations folder", step: .readMigrations, path: url.path, error: error)
        }
        var steps: [MigrationStep] = []
        var byNumber: [Int: String] = [:]
        for name in names.sorted() where !name.hasPrefix(".") && !name.uppercased().hasPrefix("README") {
            let file = url.appendingPathComponent(name)
            guard let step = MigrationStep(url: file) else {
                let ext = (name as NSString).pathExtension
                let why = !ext.isEmpty && MigrationStep.Kind(rawValue: ext) == nil
                    ? "unknown step extension '.\(ext)' (expected .sql, .csv or .json)"
                    : "not a step name: expected NNNN_description.sql|csv|json (digits, an underscore, letters/digits/underscores)"
                throw PackagingError(.invalidStepName, step: .readMigrations, path: file.path, message: why)
            }
            if let other = byNumber[step.number] {
                throw PackagingError(.duplicateStepNumber, step: .readMigrations, path: file.path, message: "step number \(step.number) is also used by \(other)")
            }
            byNumber[step.number] = name
            steps.append(step)
        }
        self.url = url
        self.steps = steps.sorted { $0.number < $1.number }
    }

    /// The step id and checksum of every step, as a seed records them.
    public func recordedSteps() throws(PackagingError) -> [SeedManifest.Step] {
        var recorded: [SeedManifest.Step] = []
        for step in steps {
            recorded.append(SeedManifest.Step(id: step.id, checksum: try step.checksum()))
        }
        return recorded
    }
}
