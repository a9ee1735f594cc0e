#ifndef HOMEPWNER_CHEIF_SHIM_H
#define HOMEPWNER_CHEIF_SHIM_H
#include <libheif/heif.h>
#endif
