// ykterm_toml.h over toml++. The library is header-only here: it is compiled into this file, so nothing links
// Debian's shared libtomlplusplus (which would bring the shared libstdc++ back into the static release build).
#define TOML_HEADER_ONLY 1
// Parse errors come back in toml::parse_result, whether or not the compiler has exceptions.
#define TOML_EXCEPTIONS 0
// Nothing here writes TOML.
#define TOML_ENABLE_FORMATTERS 0
// Floats through std::from_chars, which libstdc++ has for double since GCC 11 (toml++ assumes it missing with
// GCC and Clang): toml++ otherwise reads them with an istringstream, which links libstdc++'s locales and streams
// into the release build, 0.4 MB and four more static initialisers.
#define TOML_FLOAT_CHARCONV 1
#include <toml++/toml.h>

#include "ykterm_toml.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct ykterm_toml_document {
    toml::table root;
    std::vector<ykterm_toml_node> nodes;
    // Dates and times as text; a deque, so that adding one moves none that a node points at.
    std::deque<std::string> texts;
    std::string error;
    uint32_t error_line = 0;
    uint32_t error_column = 0;
    bool failed = false;
};

namespace {

std::string date_text(const toml::date &date) {
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%04u-%02u-%02u", unsigned(date.year), unsigned(date.month),
                  unsigned(date.day));
    return buffer;
}

std::string time_text(const toml::time &time) {
    char buffer[32];
    int length = std::snprintf(buffer, sizeof buffer, "%02u:%02u:%02u", unsigned(time.hour), unsigned(time.minute),
                               unsigned(time.second));
    std::string text(buffer, size_t(length));
    if (time.nanosecond != 0) {
        length = std::snprintf(buffer, sizeof buffer, ".%09u", unsigned(time.nanosecond));
        while (length > 1 && buffer[length - 1] == '0') length--;
        text.append(buffer, size_t(length));
    }
    return text;
}

std::string date_time_text(const toml::date_time &value) {
    std::string text = date_text(value.date) + "T" + time_text(value.time);
    if (value.offset) {
        int minutes = value.offset->minutes;
        if (minutes == 0) {
            text += "Z";
        } else {
            char buffer[16];
            std::snprintf(buffer, sizeof buffer, "%c%02d:%02d", minutes < 0 ? '-' : '+', std::abs(minutes) / 60,
                          std::abs(minutes) % 60);
            text += buffer;
        }
    }
    return text;
}

void set_text(ykterm_toml_document &document, size_t index, std::string text) {
    const std::string &kept = document.texts.emplace_back(std::move(text));
    document.nodes[index].text = kept.data();
    document.nodes[index].text_length = kept.size();
}

// Appends `node` (an entry of a table when `key` is given) and everything inside it, in pre-order; false for a node
// of no kind (none, which a parsed document does not hold).
bool add(ykterm_toml_document &document, const toml::node &node, const toml::key *key) {
    const size_t index = document.nodes.size();
    ykterm_toml_node out{};
    out.line = (key && !node.is_table() ? key->source() : node.source()).begin.line;
    if (key) {
        out.key = key->str().data();
        out.key_length = key->str().size();
    }
    switch (node.type()) {
    case toml::node_type::table: out.kind = YKTERM_TOML_TABLE; break;
    case toml::node_type::array: out.kind = YKTERM_TOML_ARRAY; break;
    case toml::node_type::string: out.kind = YKTERM_TOML_STRING; break;
    case toml::node_type::integer:
        out.kind = YKTERM_TOML_INTEGER;
        out.integer = node.as_integer()->get();
        break;
    case toml::node_type::floating_point:
        out.kind = YKTERM_TOML_FLOAT;
        out.number = node.as_floating_point()->get();
        break;
    case toml::node_type::boolean:
        out.kind = YKTERM_TOML_BOOLEAN;
        out.boolean = node.as_boolean()->get();
        break;
    case toml::node_type::date: out.kind = YKTERM_TOML_DATE; break;
    case toml::node_type::time: out.kind = YKTERM_TOML_TIME; break;
    case toml::node_type::date_time: out.kind = YKTERM_TOML_DATE_TIME; break;
    case toml::node_type::none: return false;
    }
    document.nodes.push_back(out);

    if (const toml::table *table = node.as_table()) {
        // toml++ keeps a table's entries sorted by key: back to the order of the file.
        std::vector<std::pair<const toml::key *, const toml::node *>> entries;
        entries.reserve(table->size());
        for (auto &&entry : *table) entries.emplace_back(&entry.first, &entry.second);
        std::sort(entries.begin(), entries.end(),
                  [](const auto &a, const auto &b) { return a.first->source().begin < b.first->source().begin; });
        uint32_t children = 0;
        for (const auto &[entry_key, value] : entries) children += add(document, *value, entry_key);
        document.nodes[index].children = children;
    } else if (const toml::array *array = node.as_array()) {
        uint32_t children = 0;
        for (const toml::node &item : *array) children += add(document, item, nullptr);
        document.nodes[index].children = children;
    } else if (const toml::value<std::string> *string = node.as_string()) {
        document.nodes[index].text = string->get().data();
        document.nodes[index].text_length = string->get().size();
    } else if (const toml::value<toml::date> *date = node.as_date()) {
        set_text(document, index, date_text(date->get()));
    } else if (const toml::value<toml::time> *time = node.as_time()) {
        set_text(document, index, time_text(time->get()));
    } else if (const toml::value<toml::date_time> *date_time = node.as_date_time()) {
        set_text(document, index, date_time_text(date_time->get()));
    }
    return true;
}

void parse_into(ykterm_toml_document &document, std::string_view text) {
    toml::parse_result result = toml::parse(text);
    if (!result) {
        document.failed = true;
        document.error = std::string(result.error().description());
        document.error_line = result.error().source().begin.line;
        document.error_column = result.error().source().begin.column;
        return;
    }
    document.root = std::move(result).table();
    add(document, document.root, nullptr);
}

}  // namespace

extern "C" {

ykterm_toml_document *ykterm_toml_parse(const char *text, size_t length) YKTERM_TOML_NOEXCEPT {
#if defined(__cpp_exceptions)
    ykterm_toml_document *document = nullptr;
    try {
        document = new ykterm_toml_document();
        parse_into(*document, std::string_view(text ? text : "", text ? length : 0));
        return document;
    } catch (...) {
        // Memory ran out (toml++ itself throws nothing with TOML_EXCEPTIONS 0).
        delete document;
        return nullptr;
    }
#else
    ykterm_toml_document *document = new ykterm_toml_document();
    parse_into(*document, std::string_view(text ? text : "", text ? length : 0));
    return document;
#endif
}

const char *ykterm_toml_error(const ykterm_toml_document *document, uint32_t *line,
                              uint32_t *column) YKTERM_TOML_NOEXCEPT {
    if (!document->failed) return nullptr;
    if (line) *line = document->error_line;
    if (column) *column = document->error_column;
    return document->error.c_str();
}

const ykterm_toml_node *ykterm_toml_nodes(const ykterm_toml_document *document, size_t *count) YKTERM_TOML_NOEXCEPT {
    *count = document->nodes.size();
    return document->nodes.data();
}

void ykterm_toml_free(ykterm_toml_document *document) YKTERM_TOML_NOEXCEPT { delete document; }

}
