// HTML-safe text for the report pages (html_text.hpp).
#include "results/html_text.hpp"

namespace mksim::results::html {

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string script_safe_json(const nlohmann::json& value) {
  const std::string text = value.dump();
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

std::string script_safe_js(std::string js) {
  for (const std::string& bad : {std::string("</script"), std::string("</SCRIPT"), std::string("<!--")}) {
    std::size_t at = 0;
    while ((at = js.find(bad, at)) != std::string::npos) {
      js.insert(at + 1, 1, '\\');  // (a char, not a string: GCC 12 warns -Wrestrict on the latter)
      at += bad.size() + 1;
    }
  }
  return js;
}

}  // namespace mksim::results::html
