#include "cli/ctest_regex.hpp"

#include "results/terminal_text.hpp"

#include <memory>

namespace cts {

// Parses a pattern into a tree (recursion bounded by kMaxNesting), then emits the program.
class CtestRegexCompiler {
 public:
  CtestRegexCompiler(std::string_view p, CtestRegex& re) : p_(p), re_(re) {}

  void compile() {
    if (p_.size() > CtestRegex::kMaxPatternChars)
      throw CtestRegexError("longer than " + std::to_string(CtestRegex::kMaxPatternChars) + " characters");
    auto tree = alternation(0);
    if (at_ < p_.size()) throw CtestRegexError("unmatched ')' at offset " + std::to_string(at_));
    emit(*tree);
    re_.prog_.push_back({CtestRegex::Op::match});
  }

 private:
  enum class Kind { byte, any, set, bol, eol, concat, alt, star, plus, quest };
  struct Node {
    Kind kind;
    unsigned char byte = 0;
    int set = -1;
    std::vector<std::unique_ptr<Node>> kids{};
  };
  using NodeP = std::unique_ptr<Node>;

  static NodeP leaf(Kind k) { return std::make_unique<Node>(Node{k}); }

  NodeP alternation(int depth) {
    auto alt = leaf(Kind::alt);
    alt->kids.push_back(concatenation(depth));
    while (at_ < p_.size() && p_[at_] == '|') {
      ++at_;
      alt->kids.push_back(concatenation(depth));
    }
    if (alt->kids.size() == 1) return std::move(alt->kids.front());
    return alt;
  }

  NodeP concatenation(int depth) {
    auto cat = leaf(Kind::concat);
    while (at_ < p_.size() && p_[at_] != '|' && p_[at_] != ')') {
      NodeP a = atom(depth);
      if (at_ < p_.size() && (p_[at_] == '*' || p_[at_] == '+' || p_[at_] == '?')) {
        auto rep = leaf(p_[at_] == '*' ? Kind::star : p_[at_] == '+' ? Kind::plus : Kind::quest);
        rep->kids.push_back(std::move(a));
        a = std::move(rep);
        ++at_;
        if (at_ < p_.size() && (p_[at_] == '*' || p_[at_] == '+' || p_[at_] == '?'))
          throw CtestRegexError("nested *?+ at offset " + std::to_string(at_));
      }
      cat->kids.push_back(std::move(a));
    }
    return cat;
  }

  NodeP atom(int depth) {
    const char c = p_[at_++];
    switch (c) {
      case '(': {
        if (depth + 1 > CtestRegex::kMaxNesting)
          throw CtestRegexError("more than " + std::to_string(CtestRegex::kMaxNesting) +
                                " levels of parentheses");
        NodeP inner = alternation(depth + 1);
        if (at_ >= p_.size() || p_[at_] != ')') throw CtestRegexError("unmatched '('");
        ++at_;
        return inner;
      }
      case '*':
      case '+':
      case '?':
        throw CtestRegexError(std::string("'") + c + "' follows nothing at offset " +
                              std::to_string(at_ - 1));
      case '.':
        return leaf(Kind::any);
      case '^':
        return leaf(Kind::bol);
      case '$':
        return leaf(Kind::eol);
      case '[':
        return bracket();
      case '\\': {
        if (at_ >= p_.size()) throw CtestRegexError("trailing '\\'");
        auto n = leaf(Kind::byte);
        n->byte = static_cast<unsigned char>(p_[at_++]);
        return n;
      }
      default: {
        auto n = leaf(Kind::byte);
        n->byte = static_cast<unsigned char>(c);
        return n;
      }
    }
  }

  // After '[': "^" negates, a first ']' or '-' is literal, "a-z" is a range, no escapes.
  NodeP bracket() {
    std::bitset<256> set;
    bool negate = false;
    if (at_ < p_.size() && p_[at_] == '^') negate = true, ++at_;
    bool first = true;
    for (;;) {
      if (at_ >= p_.size()) throw CtestRegexError("unmatched '['");
      const unsigned char c = static_cast<unsigned char>(p_[at_]);
      if (c == ']' && !first) break;
      first = false;
      ++at_;
      if (at_ + 1 < p_.size() && p_[at_] == '-' && p_[at_ + 1] != ']') {
        const unsigned char hi = static_cast<unsigned char>(p_[at_ + 1]);
        if (hi < c) throw CtestRegexError("invalid range in [] at offset " + std::to_string(at_ - 1));
        for (unsigned v = c; v <= hi; ++v) set.set(v);
        at_ += 2;
      } else {
        set.set(c);
      }
    }
    ++at_;  // ']'
    if (negate) set.flip();
    auto n = leaf(Kind::set);
    n->set = static_cast<int>(re_.sets_.size());
    re_.sets_.push_back(set);
    return n;
  }

  int pc() const { return static_cast<int>(re_.prog_.size()); }
  int push(CtestRegex::Op op) {
    re_.prog_.push_back({op});
    return pc() - 1;
  }

  void emit(const Node& n) {
    using Op = CtestRegex::Op;
    switch (n.kind) {
      case Kind::byte:
        re_.prog_.push_back({Op::byte, n.byte});
        return;
      case Kind::any:
        push(Op::any);
        return;
      case Kind::set: {
        const int at = push(Op::set);
        re_.prog_[at].set = n.set;
        return;
      }
      case Kind::bol:
        push(Op::bol);
        return;
      case Kind::eol:
        push(Op::eol);
        return;
      case Kind::concat:
        for (const auto& k : n.kids) emit(*k);
        return;
      case Kind::alt: {
        // split L1, next; L1: a; jump end; next: split L2, next' ... last: z; end:
        std::vector<int> jumps;
        for (std::size_t i = 0; i < n.kids.size(); ++i) {
          const bool last = i + 1 == n.kids.size();
          const int split = last ? -1 : push(Op::split);
          if (split >= 0) re_.prog_[split].x = pc();
          emit(*n.kids[i]);
          if (!last) {
            jumps.push_back(push(Op::jump));
            re_.prog_[split].y = pc();
          }
        }
        for (int j : jumps) re_.prog_[j].x = pc();
        return;
      }
      case Kind::star: {
        const int split = push(Op::split);
        re_.prog_[split].x = pc();
        emit(*n.kids.front());
        const int back = push(Op::jump);
        re_.prog_[back].x = split;
        re_.prog_[split].y = pc();
        return;
      }
      case Kind::plus: {
        const int body = pc();
        emit(*n.kids.front());
        const int split = push(Op::split);
        re_.prog_[split].x = body;
        re_.prog_[split].y = pc();
        return;
      }
      case Kind::quest: {
        const int split = push(Op::split);
        re_.prog_[split].x = pc();
        emit(*n.kids.front());
        re_.prog_[split].y = pc();
        return;
      }
    }
  }

  std::string_view p_;
  CtestRegex& re_;
  std::size_t at_ = 0;
};

CtestRegex::CtestRegex(std::string_view pattern) { CtestRegexCompiler(pattern, *this).compile(); }

bool CtestRegex::search(std::string_view text) const {
  // Thompson's simulation: the set of program positions alive before each byte. `seen[pc] == gen`
  // keeps each position once per step, so a step costs at most the program's size.
  const int n = static_cast<int>(prog_.size());
  std::vector<int> now, next, stack;
  std::vector<std::size_t> seen(n, 0);
  now.reserve(n);
  next.reserve(n);
  // Adds pc and everything reachable from it without reading a byte; true when that reaches match.
  auto add = [&](std::vector<int>& list, int start, std::size_t pos, std::size_t gen) {
    stack.assign(1, start);
    while (!stack.empty()) {
      const int at = stack.back();
      stack.pop_back();
      if (seen[at] == gen) continue;
      seen[at] = gen;
      const Inst& in = prog_[at];
      switch (in.op) {
        case Op::match:
          return true;
        case Op::jump:
          stack.push_back(in.x);
          break;
        case Op::split:
          stack.push_back(in.y);
          stack.push_back(in.x);
          break;
        case Op::bol:
          if (pos == 0) stack.push_back(at + 1);
          break;
        case Op::eol:
          if (pos == text.size()) stack.push_back(at + 1);
          break;
        default:
          list.push_back(at);
      }
    }
    return false;
  };
  for (std::size_t pos = 0;; ++pos) {
    const std::size_t gen = pos + 1;
    if (add(now, 0, pos, gen)) return true;  // a match may start at every position
    if (pos == text.size()) return false;
    const unsigned char c = static_cast<unsigned char>(text[pos]);
    next.clear();
    for (int at : now) {
      const Inst& in = prog_[at];
      const bool takes = in.op == Op::any || (in.op == Op::byte && in.byte == c) ||
                         (in.op == Op::set && sets_[in.set].test(c));
      if (takes && add(next, at + 1, pos + 1, gen + 1)) return true;
    }
    now.swap(next);
  }
}

CtestRegex compile_ctest_regex(const std::string& what, const std::string& pattern) {
  try {
    return CtestRegex(pattern);
  } catch (const CtestRegexError& e) {
    throw CtestRegexError(what + " '" + terminal_safe(pattern, 80) +
                          "' is not a valid regular expression: " + e.what());
  }
}

}  // namespace cts
