#include "report/doc.hpp"

#include <cstdio>
#include <sstream>

#include "results/xml.hpp"

namespace cts::doc {

void Doc::heading(const std::string& t, int level) {
  Block b{Block::Kind::Heading};
  b.level = level;
  b.text = t;
  blocks.push_back(std::move(b));
}
void Doc::paragraph(const std::string& t) {
  Block b{Block::Kind::Paragraph};
  b.text = t;
  blocks.push_back(std::move(b));
}
void Doc::verdict(const std::string& t, const std::string& css) {
  Block b{Block::Kind::Verdict};
  b.text = t;
  b.css = css;
  blocks.push_back(std::move(b));
}
void Doc::table(Table t) {
  Block b{Block::Kind::Table};
  b.table = std::move(t);
  blocks.push_back(std::move(b));
}
void Doc::list(std::vector<std::string> items) {
  Block b{Block::Kind::List};
  b.items = std::move(items);
  blocks.push_back(std::move(b));
}
void Doc::svg(const std::string& s, const std::string& caption, const std::string& file) {
  Block b{Block::Kind::Svg};
  b.svg = s;
  b.text = caption;
  b.svg_file = file;
  blocks.push_back(std::move(b));
}

std::vector<std::pair<std::string, std::string>> svg_files(const Doc& d) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& b : d.blocks)
    if (b.kind == Block::Kind::Svg && !b.svg_file.empty())
      out.emplace_back(b.svg_file, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + b.svg + "\n");
  return out;
}

namespace {

std::string md_cell(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|')
      o += "\\|";
    else if (c == '\n' || c == '\r')
      o += ' ';
    else
      o += c;
  }
  return o.empty() ? " " : o;
}

// A relative file path as a link target: '%' (file_names.hpp escapes) and what ends a link escaped.
std::string url_path(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '%' || c == ' ' || c == '(' || c == ')') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      o += buf;
    } else {
      o += c;
    }
  }
  return o;
}

}  // namespace

std::string to_markdown(const Doc& d, const std::string& unplotted) {
  std::ostringstream o;
  o << "# " << d.title << "\n\n";
  for (const auto& b : d.blocks) {
    switch (b.kind) {
      case Block::Kind::Heading:
        o << std::string(static_cast<size_t>(b.level), '#') << ' ' << b.text << "\n\n";
        break;
      case Block::Kind::Paragraph:
        o << b.text << "\n\n";
        break;
      case Block::Kind::Verdict:
        o << "**" << b.text << "**\n\n";
        break;
      case Block::Kind::List:
        for (const auto& i : b.items) o << "- " << md_cell(i) << "\n";
        o << "\n";
        break;
      case Block::Kind::Table: {
        const auto& t = b.table;
        o << "|";
        for (const auto& h : t.header) o << ' ' << md_cell(h) << " |";
        o << "\n|";
        for (size_t i = 0; i < t.header.size(); ++i) o << " --- |";
        o << "\n";
        for (const auto& r : t.rows) {
          o << "|";
          for (size_t i = 0; i < t.header.size(); ++i) o << ' ' << md_cell(i < r.size() ? r[i] : "") << " |";
          o << "\n";
        }
        o << "\n";
        break;
      }
      case Block::Kind::Svg:
        if (!b.svg_file.empty())
          o << "![" << b.text << "](" << url_path(b.svg_file) << ")\n\n";
        else
          o << "*" << b.text << "* (" << unplotted << ")\n\n";
        break;
    }
  }
  return o.str();
}

std::string to_html(const Doc& d) {
  using xml::escape;
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>" << escape(d.title)
    << "</title>\n<style>\n"
       "body{font-family:system-ui,-apple-system,Segoe "
       "UI,Roboto,sans-serif;margin:2em;max-width:80em;color:#222}\n"
       "h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}\n"
       "table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ccc;padding:.25em .6em;"
       "text-align:left;vertical-align:top;font-size:.92em}th{background:#f3f3f3}\n"
       "tr.fail td{background:#fde8e8}tr.pass td{background:#eaf7ea}tr.skip td{background:#fff8e1}\n"
       ".verdict{font-size:1.6em;font-weight:bold;padding:.5em 1em;border-radius:.3em;display:inline-block}\n"
       ".verdict.pass{background:#2e7d32;color:#fff}.verdict.fail{background:#c62828;color:#fff}\n"
       ".verdict.waived{background:#558b2f;color:#fff}.verdict.no_gpu{background:#ef6c00;color:#fff}\n"
       "figure{display:inline-block;margin:.5em 1em .5em 0}figcaption{font-size:.9em;color:#555}\n"
       "</style>\n</head>\n<body>\n<h1>"
    << escape(d.title) << "</h1>\n";
  for (const auto& b : d.blocks) {
    switch (b.kind) {
      case Block::Kind::Heading:
        o << "<h" << b.level << ">" << escape(b.text) << "</h" << b.level << ">\n";
        break;
      case Block::Kind::Paragraph:
        o << "<p>" << escape(b.text) << "</p>\n";
        break;
      case Block::Kind::Verdict:
        o << "<p><span class=\"verdict " << escape(b.css) << "\">" << escape(b.text) << "</span></p>\n";
        break;
      case Block::Kind::List:
        o << "<ul>\n";
        for (const auto& i : b.items) o << "<li>" << escape(i) << "</li>\n";
        o << "</ul>\n";
        break;
      case Block::Kind::Table: {
        const auto& t = b.table;
        o << "<table>\n<thead><tr>";
        for (const auto& h : t.header) o << "<th>" << escape(h) << "</th>";
        o << "</tr></thead>\n<tbody>\n";
        for (size_t r = 0; r < t.rows.size(); ++r) {
          std::string cls = r < t.row_class.size() ? t.row_class[r] : "";
          o << (cls.empty() ? "<tr>" : "<tr class=\"" + escape(cls) + "\">");
          for (size_t i = 0; i < t.header.size(); ++i)
            o << "<td>" << escape(i < t.rows[r].size() ? t.rows[r][i] : "") << "</td>";
          o << "</tr>\n";
        }
        o << "</tbody>\n</table>\n";
        break;
      }
      case Block::Kind::Svg:
        o << "<figure>\n" << b.svg << "\n<figcaption>" << escape(b.text) << "</figcaption>\n</figure>\n";
        break;
    }
  }
  o << "</body>\n</html>\n";
  return o.str();
}

}  // namespace cts::doc
