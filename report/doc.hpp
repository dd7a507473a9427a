// A tiny document model so that each report is built once and rendered twice, as Markdown and as
// a self-contained HTML page (inline CSS and SVG, no scripts, well-formed XHTML-style markup).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace cts::doc {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // Optional per-row CSS class in HTML ("fail", "pass", "skip", "") -- same length as rows or empty.
  std::vector<std::string> row_class;
};

struct Block {
  enum class Kind { Heading, Paragraph, Verdict, Table, Svg, List };
  explicit Block(Kind k) : kind(k) {}
  Kind kind;
  int level = 2;                   // Heading
  std::string text;                // Heading, Paragraph, Verdict (text), Svg (caption)
  std::string css;                 // Verdict: "pass" / "fail"
  Table table;                     // Table
  std::string svg;                 // Svg: the <svg> element
  std::string svg_file;            // Svg: where Markdown links it (relative), may be empty
  std::vector<std::string> items;  // List
};

struct Doc {
  std::string title;
  std::vector<Block> blocks;
  void heading(const std::string& t, int level = 2);
  void paragraph(const std::string& t);
  void verdict(const std::string& t, const std::string& css);
  void table(Table t);
  void list(std::vector<std::string> items);
  void svg(const std::string& svg, const std::string& caption, const std::string& file);
};

// A plot that was written to no file is named by its caption and `unplotted` (where it can be seen).
std::string to_markdown(const Doc& d, const std::string& unplotted = "plot in the HTML summary");
std::string to_html(const Doc& d);
// The plots Markdown links: (relative file, standalone SVG document) for each Svg block with a file.
std::vector<std::pair<std::string, std::string>> svg_files(const Doc& d);

}  // namespace cts::doc
