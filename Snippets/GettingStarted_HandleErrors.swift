// snippet.hide
// GettingStarted.md, "Handle errors".
import Foundation
import GRDB
import Reseed

func start(with database: DatabasePool) {}
func showRetry() {}

// In a function: the same do/catch at the top level of a file crashes Swift 6.3.1's compiler.
func startOrOfferRetry(launcher: Launcher) throws(ReseedError) {
    // snippet.show
    do {
        let (database, _) = try launcher.launch()
        start(with: database)
    } catch let error where error.code == .storeBusy || error.code == .lockTimeout {
        showRetry()
    }
    // snippet.hide
}
