#include "results/xml.hpp"

#include <cstring>

#include "matrix/input.hpp"

namespace cts::xml {

std::optional<std::string> Element::attr(const std::string& key) const {
  for (const auto& [k, v] : attributes)
    if (k == key) return v;
  return std::nullopt;
}

std::string Element::attr_or(const std::string& key, const std::string& fallback) const {
  auto v = attr(key);
  return v ? *v : fallback;
}

const Element* Element::child(const std::string& n) const {
  for (const auto& c : children)
    if (c.name == n) return &c;
  return nullptr;
}

std::vector<const Element*> Element::children_named(const std::string& n) const {
  std::vector<const Element*> out;
  for (const auto& c : children)
    if (c.name == n) out.push_back(&c);
  return out;
}

namespace {

bool is_name_start(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return std::isalpha(u) || c == '_' || c == ':' || u >= 0x80;
}
bool is_name_char(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return is_name_start(c) || std::isdigit(u) || c == '-' || c == '.';
}
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class Parser {
 public:
  Parser(const std::string& text, const std::string& origin) : s_(text), origin_(origin) {}

  Element document() {
    if (s_.compare(0, 3, "\xEF\xBB\xBF") == 0) advance(3);
    misc(true);
    if (eof()) fail("no root element (empty or truncated file)");
    if (peek() != '<') fail("text before the root element");
    Element root = element();
    misc(false);
    if (!eof()) fail(std::string("content after the root element </") + root.name + ">");
    return root;
  }

 private:
  const std::string& s_;
  const std::string& origin_;
  size_t i_ = 0;
  int line_ = 1, col_ = 1;
  int depth_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    // The message quotes names and entities from the file: kept valid UTF-8 for the bundle's JSON.
    throw XmlError(
        to_valid_utf8(origin_ + ":" + std::to_string(line_) + ":" + std::to_string(col_) + ": " + what));
  }
  bool eof() const { return i_ >= s_.size(); }
  char peek() const { return s_[i_]; }
  bool starts(const char* lit) const { return s_.compare(i_, std::strlen(lit), lit) == 0; }
  void advance(size_t n = 1) {
    for (size_t k = 0; k < n && i_ < s_.size(); ++k, ++i_) {
      if (s_[i_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
    }
  }
  void skip_space() {
    while (!eof() && is_space(peek())) advance();
  }
  void expect(const char* lit, const char* context) {
    if (!starts(lit)) {
      if (eof()) fail(std::string("unexpected end of file in ") + context + " (truncated?)");
      fail(std::string("expected '") + lit + "' in " + context);
    }
    advance(std::strlen(lit));
  }
  // Skips to just after `terminator`; fails at end of file naming what was open.
  void skip_past(const char* terminator, const char* what) {
    size_t at = s_.find(terminator, i_);
    if (at == std::string::npos) fail(std::string("unterminated ") + what + " (truncated?)");
    advance(at - i_ + std::strlen(terminator));
  }

  // Comments, processing instructions, whitespace; a DOCTYPE only before the root.
  void misc(bool prolog) {
    for (;;) {
      skip_space();
      if (starts("<!--")) {
        comment();
      } else if (starts("<?")) {
        skip_past("?>", "processing instruction");
      } else if (prolog && starts("<!DOCTYPE")) {
        size_t at = s_.find('>', i_);
        if (at == std::string::npos) fail("unterminated DOCTYPE (truncated?)");
        if (s_.substr(i_, at - i_).find('[') != std::string::npos)
          fail("DOCTYPE internal subsets are not supported");
        advance(at - i_ + 1);
      } else {
        return;
      }
    }
  }

  void comment() {
    advance(4);
    size_t at = s_.find("--", i_);
    if (at == std::string::npos) fail("unterminated comment (truncated?)");
    advance(at - i_);
    if (!starts("-->")) fail("'--' inside a comment");
    advance(3);
  }

  std::string name(const char* context) {
    if (eof()) fail(std::string("unexpected end of file in ") + context + " (truncated?)");
    if (!is_name_start(peek())) fail(std::string("expected a name in ") + context);
    size_t b = i_;
    while (!eof() && is_name_char(peek())) advance();
    return s_.substr(b, i_ - b);
  }

  // At '&': decodes one reference into out.
  void reference(std::string& out) {
    size_t semi = s_.find(';', i_);
    if (semi == std::string::npos || semi - i_ > 12)
      fail("'&' that starts no entity reference (write &amp;)");
    std::string ent = s_.substr(i_ + 1, semi - i_ - 1);
    if (ent == "lt")
      out += '<';
    else if (ent == "gt")
      out += '>';
    else if (ent == "amp")
      out += '&';
    else if (ent == "quot")
      out += '"';
    else if (ent == "apos")
      out += '\'';
    else if (ent.size() > 1 && ent[0] == '#') {
      bool hex = ent[1] == 'x';
      std::string digits = ent.substr(hex ? 2 : 1);
      if (digits.empty()) fail("empty character reference &" + ent + ";");
      unsigned long cp = 0;
      for (char c : digits) {
        int d = std::isdigit(static_cast<unsigned char>(c))             ? c - '0'
                : (hex && std::isxdigit(static_cast<unsigned char>(c))) ? (std::tolower(c) - 'a' + 10)
                                                                        : -1;
        if (d < 0) fail("bad character reference &" + ent + ";");
        cp = cp * (hex ? 16 : 10) + static_cast<unsigned long>(d);
        if (cp > 0x10FFFF) fail("character reference &" + ent + "; out of range");
      }
      if (cp == 0) fail("character reference &" + ent + "; is not a valid XML character");
      append_utf8(out, cp);
    } else {
      fail("unknown entity &" + ent + ";");
    }
    advance(semi - i_ + 1);
  }

  std::string attribute_value() {
    if (eof()) fail("unexpected end of file in an attribute (truncated?)");
    char q = peek();
    if (q != '"' && q != '\'') fail("attribute value must be quoted");
    advance();
    std::string v;
    for (;;) {
      if (eof()) fail("unterminated attribute value (truncated?)");
      char c = peek();
      if (c == q) break;
      if (c == '<') fail("'<' inside an attribute value");
      if (c == '&') {
        reference(v);
        continue;
      }
      v += (c == '\t' || c == '\n' || c == '\r') ? ' ' : c;  // attribute-value normalisation
      advance();
    }
    advance();
    return v;
  }

  Element element() {
    // Elements nest by recursion here: a depth limit keeps a hostile file from the stack's end.
    struct Depth {
      int& d;
      explicit Depth(int& x) : d(++x) {}
      ~Depth() { --d; }
    } depth(depth_);
    if (depth_ > kMaxDepth) fail("elements nested deeper than " + std::to_string(kMaxDepth) + " levels");
    Element e;
    e.line = line_;
    int open_col = col_;
    advance();  // '<'
    e.name = name("a start tag");
    for (;;) {
      bool had_space = !eof() && is_space(peek());
      skip_space();
      if (eof()) fail("unexpected end of file in <" + e.name + "> (truncated?)");
      if (starts("/>")) {
        advance(2);
        return e;
      }
      if (peek() == '>') {
        advance();
        break;
      }
      if (!had_space) fail("expected whitespace, '>' or '/>' in <" + e.name + ">");
      std::string key = name("an attribute");
      skip_space();
      expect("=", "an attribute");
      skip_space();
      std::string val = attribute_value();
      if (e.attr(key)) fail("duplicate attribute '" + key + "' in <" + e.name + ">");
      e.attributes.emplace_back(std::move(key), std::move(val));
    }
    // Content until the matching end tag.
    for (;;) {
      if (eof()) {
        throw XmlError(to_valid_utf8(origin_ + ":" + std::to_string(line_) + ":" + std::to_string(col_) +
                                     ": unexpected end of file: <" + e.name + "> opened at line " +
                                     std::to_string(e.line) + ", column " + std::to_string(open_col) +
                                     " is not closed (truncated?)"));
      }
      char c = peek();
      if (c == '<') {
        if (starts("</")) {
          advance(2);
          std::string end = name("an end tag");
          if (end != e.name)
            fail("end tag </" + end + "> does not match <" + e.name + "> opened at line " +
                 std::to_string(e.line));
          skip_space();
          expect(">", "an end tag");
          return e;
        }
        if (starts("<!--")) {
          comment();
        } else if (starts("<![CDATA[")) {
          advance(9);
          size_t at = s_.find("]]>", i_);
          if (at == std::string::npos) fail("unterminated CDATA section (truncated?)");
          e.text += s_.substr(i_, at - i_);
          advance(at - i_ + 3);
        } else if (starts("<?")) {
          skip_past("?>", "processing instruction");
        } else if (starts("<!")) {
          fail("markup declaration inside an element");
        } else {
          e.children.push_back(element());
        }
      } else if (c == '&') {
        reference(e.text);
      } else {
        if (starts("]]>")) fail("']]>' in character data");
        e.text += c;
        advance();
      }
    }
  }
};

}  // namespace

Element parse(const std::string& text, const std::string& origin) { return Parser(text, origin).document(); }

Element parse_file(const std::string& path) {
  try {
    return parse(read_input_file(path), path);
  } catch (const InputError& e) {
    throw XmlError(e.what());
  }
}

}  // namespace cts::xml
