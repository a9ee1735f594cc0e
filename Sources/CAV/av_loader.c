// FFmpeg's libraries loaded at run time (dlopen), not linked: the one homepwner executable runs
// every service, and FFmpeg's libraries with what they link come to about 280 MB, which only a
// thumbnail worker making movie posters needs. See include/cav.h.
#define HP_AV_LOADER
#include "cav.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define HP_STRINGIFY2(x) #x
#define HP_STRINGIFY(x) HP_STRINGIFY2(x)

#if LIBAVFORMAT_VERSION_MAJOR >= 61
#error "FFmpeg 7 moved stream side data (av_packet_side_data_get): homepwner_display_matrix needs it"
#endif

#define HP_DEFINE(library, name) __typeof__(&name) _Nonnull hp_##name;
HP_AV_FUNCTIONS(HP_DEFINE)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[512];

static const char *const library_names[] = {
    "libavutil.so." HP_STRINGIFY(LIBAVUTIL_VERSION_MAJOR),
    "libswscale.so." HP_STRINGIFY(LIBSWSCALE_VERSION_MAJOR),
    "libavcodec.so." HP_STRINGIFY(LIBAVCODEC_VERSION_MAJOR),
    "libavformat.so." HP_STRINGIFY(LIBAVFORMAT_VERSION_MAJOR),
};
enum { AVUTIL, SWSCALE, AVCODEC, AVFORMAT };

static void load(void) {
    void *handles[4] = {0};
    for (int index = 0; index < 4; index++) {
        handles[index] = dlopen(library_names[index], RTLD_NOW | RTLD_LOCAL);
        if (!handles[index]) {
            const char *why = dlerror();
            snprintf(failure, sizeof failure, "%s cannot be loaded (%s)", library_names[index], why ? why : "not found");
            return;
        }
    }
#define HP_LOAD(library, name)                                                                  \
    hp_##name = (__typeof__(&name))dlsym(handles[library], #name);                              \
    if (!hp_##name) {                                                                           \
        snprintf(failure, sizeof failure, "%s has no %s", library_names[library], #name);      \
        return;                                                                                 \
    }
    HP_AV_FUNCTIONS(HP_LOAD)
#undef HP_LOAD
}

const char *homepwner_av_load(void) {
    pthread_once(&once, load);
    return failure[0] ? failure : NULL;
}

const char *homepwner_av_library_names(void) {
    static char names[256];
    snprintf(names, sizeof names, "%s, %s, %s, %s", library_names[0], library_names[1], library_names[2], library_names[3]);
    return names;
}

const int32_t *homepwner_display_matrix(const AVStream *stream) {
    size_t size = 0;
    const uint8_t *data = hp_av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
    return data && size >= 36 ? (const int32_t *)data : NULL;
}

void homepwner_error_string(int code, char *buffer, size_t size) {
    hp_av_strerror(code, buffer, size);
}
