/* Debian builds libxml2 with ICU, and encoding.h then includes ICU's headers, whose types clash with the copy of ICU
   that Swift's Foundation carries (one enum, two definitions). Nothing here uses libxml2's ICU converters: the
   declarations are left out (only the layout of xmlCharEncodingHandler, which Swift never touches, depends on it). */
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlsave.h>

/* xmlFree is a global variable (a function pointer the application may replace): Swift 6 refuses to read a
   mutable global, so the shim calls it. */
static inline void cxml_free(void *pointer) {
    xmlFree(pointer);
}

/* The node's namespace URI, or NULL (the struct's ns field through one call, so Swift need not follow it). */
static inline const xmlChar *cxml_node_namespace(const xmlNode *node) {
    return node->ns != NULL ? node->ns->href : NULL;
}

/* An attribute's value (to be freed with cxml_free), or NULL. */
static inline xmlChar *cxml_attribute_value(const xmlAttr *attribute) {
    return xmlNodeListGetString(attribute->doc, attribute->children, 1);
}

/* The tree API takes xmlChar (unsigned char) strings; Swift hands over its strings as char. */
static inline xmlNodePtr cxml_new_node(const char *name) {
    return xmlNewNode(NULL, (const xmlChar *)name);
}

static inline xmlNsPtr cxml_new_ns(xmlNodePtr node, const char *href, const char *prefix) {
    return xmlNewNs(node, (const xmlChar *)href, (const xmlChar *)prefix);
}

static inline xmlNodePtr cxml_new_child(xmlNodePtr parent, const char *name) {
    return xmlNewChild(parent, NULL, (const xmlChar *)name, NULL);
}

/* The value is escaped as an attribute needs. */
static inline void cxml_set_attribute(xmlNodePtr node, const char *name, const char *value) {
    xmlSetProp(node, (const xmlChar *)name, (const xmlChar *)value);
}

/* A text node (escaped when the document is written). */
static inline void cxml_add_text(xmlNodePtr node, const char *text) {
    xmlAddChild(node, xmlNewText((const xmlChar *)text));
}
