#include "tests/testing/svg_document.h"

#include <expat.h>

#include <algorithm>
#include <cstring>

namespace zeus::testing {
namespace {

struct ParseState {
  SvgDocument doc;
  int depth = 0;
  // Collecting the text of a <title> (1) or <text> (2) element.
  int collecting = 0;
  int collecting_depth = 0;
  std::string text;
};

void OnStart(void* data, const XML_Char* name, const XML_Char**) {
  auto* state = static_cast<ParseState*>(data);
  if (state->depth++ == 0) state->doc.root = name;
  if (std::strcmp(name, "path") == 0) ++state->doc.paths;
  if (state->collecting == 0 &&
      (std::strcmp(name, "title") == 0 || std::strcmp(name, "text") == 0)) {
    state->collecting = std::strcmp(name, "title") == 0 ? 1 : 2;
    state->collecting_depth = state->depth;
    state->text.clear();
  }
}

void OnEnd(void* data, const XML_Char*) {
  auto* state = static_cast<ParseState*>(data);
  if (state->collecting != 0 && state->depth == state->collecting_depth) {
    (state->collecting == 1 ? state->doc.titles : state->doc.texts).push_back(state->text);
    state->collecting = 0;
  }
  --state->depth;
}

void OnText(void* data, const XML_Char* s, int len) {
  auto* state = static_cast<ParseState*>(data);
  if (state->collecting != 0) state->text.append(s, static_cast<size_t>(len));
}

}  // namespace

bool SvgDocument::HasTitle(const std::string& title) const {
  return std::find(titles.begin(), titles.end(), title) != titles.end();
}

bool SvgDocument::HasText(const std::string& fragment) const {
  return std::any_of(texts.begin(), texts.end(),
                     [&](const std::string& t) { return t.find(fragment) != std::string::npos; });
}

StatusOr<SvgDocument> ParseSvg(const std::string& xml) {
  XML_Parser parser = XML_ParserCreate(nullptr);
  ParseState state;
  XML_SetUserData(parser, &state);
  XML_SetElementHandler(parser, OnStart, OnEnd);
  XML_SetCharacterDataHandler(parser, OnText);
  const bool ok = XML_Parse(parser, xml.data(), static_cast<int>(xml.size()), 1) == XML_STATUS_OK;
  std::string error;
  if (!ok) {
    error = std::string(XML_ErrorString(XML_GetErrorCode(parser))) + " at line " +
            std::to_string(XML_GetCurrentLineNumber(parser));
  }
  XML_ParserFree(parser);
  if (!ok) return InvalidArgumentError("not well-formed XML: " + error);
  return state.doc;
}

}  // namespace zeus::testing
