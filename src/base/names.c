/* names: the length and character rules of names (see names.h). */
#include "base/names.h"
#include <string.h>

bool names_conf_valid(const char *name)
{
    size_t n = strlen(name);
    if (n < 1 || n > NAMES_CONF_MAX) return false;
    return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}
