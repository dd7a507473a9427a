#include "matrix/csv.hpp"

namespace cts {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

[[noreturn]] void fail(const std::string& file, int line, const std::string& what) {
  throw MatrixError(file + ":" + std::to_string(line) + ": " + what);
}

// Splits the text into records of fields; quoted fields may span lines.
struct Record {
  int line;
  std::vector<std::string> fields;
};

std::vector<Record> records(const std::string& in, const std::string& file) {
  std::string text = in;
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // editors on Windows add a BOM
  std::vector<Record> out;
  size_t i = 0, n = text.size();
  int line = 1;
  while (i < n) {
    // Whole-line comment or blank line (outside quotes, at the start of a record).
    size_t eol = text.find('\n', i);
    std::string raw = text.substr(i, (eol == std::string::npos ? n : eol) - i);
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (trim(raw).empty() || trim(raw)[0] == '#') {
      i = eol == std::string::npos ? n : eol + 1;
      ++line;
      continue;
    }
    Record rec{line, {}};
    std::string field;
    bool quoted = false, was_quoted = false;
    int quote_line = line;
    for (;;) {
      if (i >= n) {
        if (quoted) fail(file, quote_line, "unterminated quoted field");
        rec.fields.push_back(was_quoted ? field : trim(field));
        break;
      }
      char c = text[i];
      if (quoted) {
        if (c == '"') {
          if (i + 1 < n && text[i + 1] == '"') {
            field += '"';
            i += 2;
          } else {
            quoted = false;
            ++i;
            // After a closing quote only a separator, spaces or the end of the record may follow.
            while (i < n && (text[i] == ' ' || text[i] == '\t')) ++i;
            if (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
              fail(file, line, std::string("unexpected '") + text[i] + "' after closing quote");
          }
        } else {
          if (c == '\n') ++line;
          if (!(c == '\r' && i + 1 < n && text[i + 1] == '\n')) field += c;
          ++i;
        }
        continue;
      }
      if (c == '"') {
        if (!trim(field).empty()) fail(file, line, "quote inside an unquoted field (quote the whole field)");
        field.clear();
        quoted = was_quoted = true;
        quote_line = line;
        ++i;
      } else if (c == ',') {
        rec.fields.push_back(was_quoted ? field : trim(field));
        field.clear();
        was_quoted = false;
        ++i;
      } else if (c == '\r' || c == '\n') {
        rec.fields.push_back(was_quoted ? field : trim(field));
        if (c == '\r' && i + 1 < n && text[i + 1] == '\n') ++i;
        ++i;
        ++line;
        break;
      } else {
        field += c;
        ++i;
      }
    }
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace

const std::string& CsvRow::at(const std::string& column) const {
  static const std::string empty;
  auto it = cells.find(column);
  return it == cells.end() ? empty : it->second;
}

CsvTable parse_csv(const std::string& text, const std::string& file, const std::set<std::string>& required,
                   const std::set<std::string>& optional) {
  auto recs = records(text, file);
  if (recs.empty()) fail(file, 1, "no header row");
  CsvTable t;
  t.file = file;
  const Record& head = recs.front();
  std::set<std::string> seen;
  for (const auto& c : head.fields) {
    if (c.empty()) fail(file, head.line, "empty column name in the header");
    if (!required.count(c) && !optional.count(c)) {
      std::string known;
      for (const auto& r : required) known += (known.empty() ? "" : ", ") + r;
      for (const auto& o : optional) known += (known.empty() ? "" : ", ") + o;
      fail(file, head.line, "unknown column '" + c + "' (known: " + known + ")");
    }
    if (!seen.insert(c).second) fail(file, head.line, "column '" + c + "' appears twice");
    t.columns.push_back(c);
  }
  for (const auto& r : required)
    if (!seen.count(r)) fail(file, head.line, "missing required column '" + r + "'");
  for (size_t k = 1; k < recs.size(); ++k) {
    const Record& r = recs[k];
    if (r.fields.size() != t.columns.size())
      fail(file, r.line,
           "expected " + std::to_string(t.columns.size()) + " fields, found " +
               std::to_string(r.fields.size()));
    CsvRow row;
    row.line = r.line;
    for (size_t c = 0; c < t.columns.size(); ++c) row.cells[t.columns[c]] = r.fields[c];
    t.rows.push_back(std::move(row));
  }
  // Every matrix table has data: a header alone is a file cut short, not "no constraints".
  if (t.rows.empty()) fail(file, head.line, "a header and no data rows (truncated file?)");
  return t;
}

std::vector<std::string> split_list(const std::string& cell) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= cell.size()) {
    size_t semi = cell.find(';', start);
    std::string item = trim(cell.substr(start, semi == std::string::npos ? std::string::npos : semi - start));
    if (!item.empty()) out.push_back(item);
    if (semi == std::string::npos) break;
    start = semi + 1;
  }
  return out;
}

}  // namespace cts
