#include <hidapi/hidapi.h>
