/// Lets many operations use the store at once, or one replacement alone.
///
/// A replacement waits for the operations already running and, while it
/// waits, holds back new ones (so a stream of readers cannot starve it);
/// when it is done, every held operation goes ahead on the new store.
actor AccessGate {
    private var running = 0
    private var exclusive = false
    private var waitingShared: [CheckedContinuation<Void, Never>] = []
    private var waitingExclusive: [CheckedContinuation<Void, Never>] = []

    /// Waits until operations may run; pair with ``exitShared()``.
    func enterShared() async {
        if !exclusive && waitingExclusive.isEmpty {
            running += 1
            return
        }
        await withCheckedContinuation { waitingShared.append($0) }
    }

    func exitShared() {
        running -= 1
        if running == 0, !waitingExclusive.isEmpty {
            exclusive = true
            waitingExclusive.removeFirst().resume()
        }
    }

    /// Waits until no operation runs, holding new ones back; pair with ``exitExclusive()``.
    func enterExclusive() async {
        if !exclusive && running == 0 {
            exclusive = true
            return
        }
        await withCheckedContinuation { waitingExclusive.append($0) }
    }

    func exitExclusive() {
        exclusive = false
        if !waitingShared.isEmpty {
            running += waitingShared.count
            let released = waitingShared
            waitingShared.removeAll()
            for waiter in released { waiter.resume() }
        } else if !waitingExclusive.isEmpty {
            exclusive = true
            waitingExclusive.removeFirst().resume()
        }
    }
}
