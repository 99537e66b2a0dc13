// Text the tool writes into its SVG and CSV outputs from what the user gave (file paths, policy
// names): escaped so that the document stays well formed.
#pragma once

#include <string>
#include <string_view>

namespace mantissa::tool {

// For XML/SVG text and attribute values: & < > " ' as entities.
inline std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

// One CSV field (RFC 4180): quoted, with its quotes doubled, where it holds a comma, a quote or a
// line break; as it is otherwise.
inline std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace mantissa::tool
