// snippet.hide
// ReplacingWhileOpen.md, "Letting go in UI code".
import GRDB
import Observation
import Reseed
// snippet.show
@MainActor @Observable final class CategoriesModel {
    var names: [String] = []
    let store: LiveStore

    init(store: LiveStore) {
        self.store = store
    }

    func observe() async {
        for await event in store.events() {
            switch event {
            case .willReplace(let notice):
                names = []              // nothing from the old store stays on screen
                notice.release()
            case .replaced, .switched:
                await reload()
            case .progress(let progress):
                print("installing the new seed: \(Int(progress.fraction * 100))%")
            case .replaceFailed(let error):
                print("kept the current data: \(error)")
            }
        }
    }

    func reload() async {
        names = (try? await store.read { try String.fetchAll($0, sql: "SELECT name FROM injury_category") }) ?? []
    }
}
