/// Runs a `LinearRegex` program over a text: a Pike VM without captures.
///
/// All threads advance together, one text scalar at a time. The threads at a position are a
/// set of instruction indices, so two paths reaching the same instruction merge and each
/// instruction is visited at most once per position: at most (text length + 1) × program size
/// steps, whatever the pattern. Nothing here recurses (the epsilon closure uses an explicit
/// stack), so no text or pattern can exhaust the call stack.
struct LinearRegexMatcher {
    private let program: LinearRegex

    init(_ program: LinearRegex) { self.program = program }

    /// Whether the program matches all of `text`, and the number of steps taken.
    func run(_ text: [Unicode.Scalar]) -> (matched: Bool, steps: Int) {
        let code = program.instructions
        var current = ThreadSet(capacity: code.count)
        var next = ThreadSet(capacity: code.count)
        var stack: [Int] = []
        var steps = 0
        var context = Context(text: text, usesWordBoundaries: program.usesWordBoundaries)
        // Set membership is asked once per set and position, however many copies of the set
        // the program holds (`[a-z]{50}` has fifty).
        var memo = SetMemo(count: program.sets.count)

        addThread(0, to: &current, at: context, code: code, stack: &stack, steps: &steps)
        for position in 0..<text.count {
            if current.isEmpty { return (false, steps) }
            let c = text[position]
            let key = program.usesFolding ? LinearRegexCaseFolding.key(c) : c
            memo.startPosition()
            context.advance(past: c)
            next.removeAll()
            for pc in current.members {
                steps += 1
                let consumed: Bool
                switch code[pc] {
                case .scalar(let s): consumed = s == c
                case .foldedScalar(let k): consumed = k == key
                case .set(let index): consumed = memo.contains(index, c, program.sets)
                default: consumed = false
                }
                if consumed { addThread(pc + 1, to: &next, at: context, code: code, stack: &stack, steps: &steps) }
            }
            swap(&current, &next)
        }
        return (current.contains(code.count - 1), steps)
    }

    /// Adds `pc` and everything reachable from it without consuming text (the epsilon closure)
    /// at the context's position.
    private func addThread(_ pc: Int, to threads: inout ThreadSet, at context: Context, code: [LinearRegex.Instruction],
                           stack: inout [Int], steps: inout Int) {
        stack.append(pc)
        while let pc = stack.popLast() {
            guard threads.insert(pc) else { continue }
            steps += 1
            switch code[pc] {
            case .jump(let offset):
                stack.append(pc + offset)
            case .split(let first, let second):
                // Pushed second first only to explore in pattern order; the order does not
                // change the answer, which is whether any thread reaches the end.
                stack.append(pc + second)
                stack.append(pc + first)
            case .assert(let assertion):
                if context.holds(assertion) { stack.append(pc + 1) }
            case .scalar, .foldedScalar, .set, .match:
                break
            }
        }
    }

    /// The text position the closure is computed at, with what assertions look at.
    private struct Context {
        let text: [Unicode.Scalar]
        let usesWordBoundaries: Bool
        var position = 0
        /// Whether the last scalar before `position` that `\b` does not look through is a word character.
        var previousIsWord = false

        init(text: [Unicode.Scalar], usesWordBoundaries: Bool) {
            self.text = text
            self.usesWordBoundaries = usesWordBoundaries
        }

        mutating func advance(past c: Unicode.Scalar) {
            position += 1
            if usesWordBoundaries && !LinearRegexProperty.isWordBoundaryTransparent(c) {
                previousIsWord = LinearRegexProperty.isWord(c)
            }
        }

        func holds(_ assertion: LinearRegex.Assertion) -> Bool {
            let n = text.count
            switch assertion {
            case .startOfText:
                return position == 0
            case .endOfText:
                return position == n
            case .endOfTextOrBeforeFinalTerminator:
                if position == n { return true }
                let c = text[position]
                if position + 1 == n {
                    // Before a final terminator, but not between the CR and LF of a final CR LF.
                    return LinearRegexProperty.isLineTerminator(c) && !(c == "\n" && position > 0 && text[position - 1] == "\r")
                }
                return position + 2 == n && c == "\r" && text[position + 1] == "\n"
            case .startOfLine:
                if position == 0 { return true }
                return position < n && LinearRegexProperty.isLineTerminator(text[position - 1])
            case .endOfLine:
                if position == n { return true }
                let c = text[position]
                return LinearRegexProperty.isLineTerminator(c) && !(c == "\n" && position > 0 && text[position - 1] == "\r")
            case .wordBoundary:
                return isWordBoundary
            case .notWordBoundary:
                return !isWordBoundary
            case .notBeforeLineFeed:
                return position == n || text[position] != "\n"
            }
        }

        /// ICU's rule: no boundary before a combining mark or format character; otherwise a
        /// boundary where word and non-word characters meet, looking back through such characters.
        private var isWordBoundary: Bool {
            var currentIsWord = false
            if position < text.count {
                let c = text[position]
                if LinearRegexProperty.isWordBoundaryTransparent(c) { return false }
                currentIsWord = LinearRegexProperty.isWord(c)
            }
            return currentIsWord != previousIsWord
        }
    }

    /// A set of instruction indices with O(1) insert, membership and clear, in insertion order
    /// (the classic sparse-set of Briggs and Torczon, which needs no initialisation per clear).
    private struct ThreadSet {
        private(set) var members: [Int] = []
        private var slot: [Int]

        init(capacity: Int) {
            slot = Array(repeating: 0, count: capacity)
            members.reserveCapacity(capacity)
        }

        var isEmpty: Bool { members.isEmpty }

        func contains(_ pc: Int) -> Bool {
            let i = slot[pc]
            return i < members.count && members[i] == pc
        }

        /// Inserts `pc`; false if it was already there.
        mutating func insert(_ pc: Int) -> Bool {
            if contains(pc) { return false }
            slot[pc] = members.count
            members.append(pc)
            return true
        }

        mutating func removeAll() { members.removeAll(keepingCapacity: true) }
    }

    /// Set answers for the current position, invalidated by bumping a generation number.
    private struct SetMemo {
        private var generation: [Int]
        private var answer: [Bool]
        private var now = 0

        init(count: Int) {
            generation = Array(repeating: 0, count: count)
            answer = Array(repeating: false, count: count)
        }

        mutating func startPosition() { now += 1 }

        mutating func contains(_ index: Int, _ c: Unicode.Scalar, _ sets: [LinearRegexScalarSet]) -> Bool {
            if generation[index] == now { return answer[index] }
            let result = sets[index].contains(c)
            generation[index] = now
            answer[index] = result
            return result
        }
    }
}
