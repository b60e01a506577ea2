/* TOML 1.0 read by toml++ (compiled into this target from Debian's libtomlplusplus-dev headers), as plain C:
 * the parsed document is a list of nodes in pre-order, each with the line it starts on, or an error with its line.
 * No exception leaves these functions. */
#ifndef YKTERM_TOML_H
#define YKTERM_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define YKTERM_TOML_NOEXCEPT noexcept
extern "C" {
#else
#define YKTERM_TOML_NOEXCEPT
#endif

typedef enum __attribute__((enum_extensibility(closed))) ykterm_toml_kind {
    YKTERM_TOML_TABLE,
    YKTERM_TOML_ARRAY,
    YKTERM_TOML_STRING,
    YKTERM_TOML_INTEGER,
    YKTERM_TOML_FLOAT,
    YKTERM_TOML_BOOLEAN,
    YKTERM_TOML_DATE,
    YKTERM_TOML_TIME,
    YKTERM_TOML_DATE_TIME,
} ykterm_toml_kind;

typedef struct ykterm_toml_node {
    ykterm_toml_kind kind;
    /* The nodes directly inside this one (a table's entries in file order, an array's items): they follow it, each
     * with the nodes inside it before the next. */
    uint32_t children;
    /* From 1. A table: the line of the header (or dotted key, or inline table) that made it; another entry of a
     * table: the line of its key; an array item: its own. */
    uint32_t line;
    /* An entry's key, UTF-8 (not NUL-terminated); NULL for the root and for array items. */
    const char *key;
    size_t key_length;
    /* STRING: its text, UTF-8 (it may hold NUL); DATE, TIME, DATE_TIME: as RFC 3339 writes it. NULL otherwise. */
    const char *text;
    size_t text_length;
    int64_t integer;
    double number;
    bool boolean;
} ykterm_toml_node;

typedef struct ykterm_toml_document ykterm_toml_document;

/* Parses `length` bytes of UTF-8 (text may be NULL when length is 0). NULL only when memory ran out; otherwise
 * free the result with ykterm_toml_free. */
ykterm_toml_document *ykterm_toml_parse(const char *text, size_t length) YKTERM_TOML_NOEXCEPT;

/* Why the text is not TOML (toml++'s message, NUL-terminated), with where toml++ stopped: *line and *column (from 1;
 * the column in characters). NULL when it parsed. */
const char *ykterm_toml_error(const ykterm_toml_document *document, uint32_t *line,
                              uint32_t *column) YKTERM_TOML_NOEXCEPT;

/* The nodes, the root table first; *count of them (none after an error). Valid until ykterm_toml_free. */
const ykterm_toml_node *ykterm_toml_nodes(const ykterm_toml_document *document, size_t *count) YKTERM_TOML_NOEXCEPT;

void ykterm_toml_free(ykterm_toml_document *document) YKTERM_TOML_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
