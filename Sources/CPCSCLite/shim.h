#include <winscard.h>
#include <wintypes.h>
#include <reader.h>
