// A small, strict XML reader and writer helpers, enough for JUnit files (gtest's and CTest's):
// elements, attributes, text, the five predefined entities and numeric character references,
// CDATA, comments, processing instructions and a DOCTYPE without an internal subset.
// Malformed input (a truncated file, a mismatched end tag, an unknown entity) throws XmlError with
// "origin:line:column: what is wrong", so a person can open the file at the right place.
#pragma once
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>
#include "results/xml_escape.hpp"

namespace cts::xml {

class XmlError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Deeper nesting is refused as malformed (a JUnit file nests four levels).
inline constexpr int kMaxDepth = 256;

struct Element {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;  // document order
  std::vector<Element> children;
  std::string text;  // all character data directly inside (text and CDATA), concatenated
  int line = 0;

  std::optional<std::string> attr(const std::string& key) const;
  std::string attr_or(const std::string& key, const std::string& fallback) const;
  const Element* child(const std::string& name) const;  // first child of that name
  std::vector<const Element*> children_named(const std::string& name) const;
};

// Parses a whole document; `origin` names it in error messages (usually the file path).
Element parse(const std::string& text, const std::string& origin);
Element parse_file(const std::string& path);

// Escapes text for an attribute value or character data (fixtures' xml_escape, shared with the
// journal reports).
inline std::string escape(const std::string& text) { return xml_escape(text); }

}  // namespace cts::xml
