/// Runs a `LinearRegex` program over a text: a Pike VM without captures.
///
/// All threads advance together, one text scalar at a time. The threads at a position are a
/// set of instruction indices, so two paths reaching the same instruction merge and each
/// instruction is visited at most once per position: at most (text length + 1) × program size
/// steps, whatever the pattern. Nothing here recurses (the epsilon closure uses an explicit
/// stack), so no text or pattern can exhaust the call stack.
///
/// MATCHES runs this once per row inside SQLite, so the loop works on raw buffers: one
/// allocation per match for all its scratch space, no reference counting per step, and ASCII
/// set membership as a bit test (`LinearRegex.asciiBitmaps`).
struct LinearRegexMatcher {
    private let program: LinearRegex

    init(_ program: LinearRegex) { self.program = program }

    /// Whether the program matches all of `text`, and the number of steps taken.
    func run(_ text: [Unicode.Scalar]) -> (matched: Bool, steps: Int) {
        let size = program.instructions.count
        let setCount = program.sets.count
        // Scratch: two thread sets (dense + sparse each), the closure stack (each instruction
        // is entered once per closure and pushes at most two more), and the set memo.
        let scratch = UnsafeMutablePointer<Int32>.allocate(capacity: 6 * size + 2 + 2 * setCount)
        scratch.initialize(repeating: 0, count: 6 * size + 2 + 2 * setCount)
        defer { scratch.deallocate() }
        var current = ThreadSet(dense: scratch, sparse: scratch + size)
        var next = ThreadSet(dense: scratch + 2 * size, sparse: scratch + 3 * size)
        let stack = scratch + 4 * size
        // Set answers for non-ASCII scalars: asked once per set and position, however many
        // copies of the set the program holds (`\p{L}{50}` has fifty).
        let memoPosition = scratch + 6 * size + 2
        let memoAnswer = memoPosition + setCount

        return program.instructions.withUnsafeBufferPointer { code in
            program.sets.withUnsafeBufferPointer { sets in
                program.asciiBitmaps.withUnsafeBufferPointer { bitmaps in
                    text.withUnsafeBufferPointer { text in
                        var steps = 0
                        var context = Context(text: text, usesWordBoundaries: program.usesWordBoundaries)

                        /// Adds `pc` and everything reachable from it without consuming text (the
                        /// epsilon closure) to `threads`, at the context's position.
                        func addThread(_ pc: Int, to threads: inout ThreadSet) {
                            var top = 0
                            stack[top] = Int32(pc)
                            top += 1
                            while top > 0 {
                                top -= 1
                                let pc = Int(stack[top])
                                guard threads.insert(pc) else { continue }
                                steps += 1
                                switch code[pc] {
                                case .jump(let offset):
                                    stack[top] = Int32(pc) + offset
                                    top += 1
                                case .split(let first, let second):
                                    // Second pushed first only to explore in pattern order; the
                                    // order does not change the answer.
                                    stack[top] = Int32(pc) + second
                                    stack[top + 1] = Int32(pc) + first
                                    top += 2
                                case .assert(let assertion):
                                    if context.holds(assertion) {
                                        stack[top] = Int32(pc + 1)
                                        top += 1
                                    }
                                case .scalar, .foldedScalar, .set, .match:
                                    break
                                }
                            }
                        }

                        addThread(0, to: &current)
                        for position in 0..<text.count {
                            if current.count == 0 { return (false, steps) }
                            let c = text[position]
                            let ascii = c.value < 0x80
                            let key = program.usesFolding ? LinearRegexCaseFolding.key(c) : c
                            context.advance(past: c)
                            next.removeAll()
                            for k in 0..<current.count {
                                let pc = Int(current.dense[k])
                                steps += 1
                                let consumed: Bool
                                switch code[pc] {
                                case .scalar(let s):
                                    consumed = s == c
                                case .foldedScalar(let folded):
                                    consumed = folded == key
                                case .set(let set):
                                    let index = Int(set)
                                    if ascii {
                                        consumed = bitmaps[2 * index + Int(c.value >> 6)] & (1 << UInt64(c.value & 63)) != 0
                                    } else if memoPosition[index] == Int32(truncatingIfNeeded: position + 1) {
                                        consumed = memoAnswer[index] != 0
                                    } else {
                                        consumed = sets[index].contains(c)
                                        memoPosition[index] = Int32(truncatingIfNeeded: position + 1)
                                        memoAnswer[index] = consumed ? 1 : 0
                                    }
                                default:
                                    consumed = false
                                }
                                if consumed { addThread(pc + 1, to: &next) }
                            }
                            swap(&current, &next)
                        }
                        return (current.contains(size - 1), steps)
                    }
                }
            }
        }
    }

    /// The text position the closure is computed at, with what assertions look at.
    private struct Context {
        let text: UnsafeBufferPointer<Unicode.Scalar>
        let usesWordBoundaries: Bool
        var position = 0
        /// Whether the last scalar before `position` that `\b` does not look through is a word character.
        var previousIsWord = false

        init(text: UnsafeBufferPointer<Unicode.Scalar>, usesWordBoundaries: Bool) {
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
    /// (the sparse set of Briggs and Torczon), over memory owned by `run`.
    private struct ThreadSet {
        let dense: UnsafeMutablePointer<Int32>
        let sparse: UnsafeMutablePointer<Int32>
        private(set) var count = 0

        init(dense: UnsafeMutablePointer<Int32>, sparse: UnsafeMutablePointer<Int32>) {
            self.dense = dense
            self.sparse = sparse
        }

        func contains(_ pc: Int) -> Bool {
            let i = Int(sparse[pc])
            return i < count && dense[i] == Int32(pc)
        }

        /// Inserts `pc`; false if it was already there.
        mutating func insert(_ pc: Int) -> Bool {
            if contains(pc) { return false }
            sparse[pc] = Int32(count)
            dense[count] = Int32(pc)
            count += 1
            return true
        }

        mutating func removeAll() { count = 0 }
    }
}
