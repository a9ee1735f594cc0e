#ifndef HOMEPWNER_CAV_H
#define HOMEPWNER_CAV_H
// FFmpeg's demuxers, decoders and pixel conversion (Debian's libavformat, libavcodec,
// libavutil, libswscale), for the Movie module only, LOADED AT RUN TIME: the one homepwner
// executable runs every service, and FFmpeg's libraries with what Debian links them to come to
// about 200 MB, which only a thumbnail worker making movie posters needs (the Docker image's
// `media` stage). The headers give the types; each function the Movie module calls is a
// pointer, hp_<name>, set by homepwner_av_load() from the library of the major version built
// against. Call homepwner_av_load() first: a NULL answer means every hp_ pointer is set.
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>

// Every function called, with the library it is in (see av_loader.c's library_names).
#define HP_AV_FUNCTIONS(X) \
    X(AVCODEC, av_packet_alloc) \
    X(AVCODEC, av_packet_free) \
    X(AVCODEC, av_packet_unref) \
    X(AVCODEC, avcodec_alloc_context3) \
    X(AVCODEC, avcodec_find_decoder_by_name) \
    X(AVCODEC, avcodec_free_context) \
    X(AVCODEC, avcodec_get_name) \
    X(AVCODEC, avcodec_open2) \
    X(AVCODEC, avcodec_parameters_to_context) \
    X(AVCODEC, avcodec_receive_frame) \
    X(AVCODEC, avcodec_send_packet) \
    X(AVFORMAT, av_find_input_format) \
    X(AVFORMAT, av_read_frame) \
    X(AVFORMAT, av_seek_frame) \
    X(AVFORMAT, avformat_alloc_context) \
    X(AVFORMAT, avformat_close_input) \
    X(AVFORMAT, avformat_index_get_entries_count) \
    X(AVFORMAT, avformat_index_get_entry) \
    X(AVFORMAT, avformat_open_input) \
    X(AVFORMAT, avio_alloc_context) \
    X(AVFORMAT, avio_context_free) \
    X(AVUTIL, av_dict_free) \
    X(AVUTIL, av_dict_set) \
    X(AVUTIL, av_frame_alloc) \
    X(AVUTIL, av_frame_free) \
    X(AVUTIL, av_frame_move_ref) \
    X(AVUTIL, av_frame_ref) \
    X(AVUTIL, av_frame_unref) \
    X(AVUTIL, av_free) \
    X(AVUTIL, av_freep) \
    X(AVUTIL, av_get_media_type_string) \
    X(AVUTIL, av_get_pix_fmt_name) \
    X(AVUTIL, av_log_set_level) \
    X(AVUTIL, av_malloc) \
    X(AVUTIL, av_rescale_q) \
    X(SWSCALE, sws_freeContext) \
    X(SWSCALE, sws_getCoefficients) \
    X(SWSCALE, sws_getContext) \
    X(SWSCALE, sws_scale) \
    X(SWSCALE, sws_setColorspaceDetails) \
    X(AVUTIL, av_strerror) \
    X(AVFORMAT, av_stream_get_side_data)

// Read-only to Swift (a `const` global is a constant to it, so no concurrency checks apply); only
// av_loader.c, which defines HP_AV_LOADER, sees them writable, and writes them once, in
// homepwner_av_load, before any caller can read them.
#ifdef HP_AV_LOADER
#define HP_DECLARE(library, name) extern __typeof__(&name) _Nonnull hp_##name;
#else
#define HP_DECLARE(library, name) extern __typeof__(&name) const _Nonnull hp_##name;
#endif
HP_AV_FUNCTIONS(HP_DECLARE)
#undef HP_DECLARE

/// Loads the four libraries and every function above, once; NULL when all are there, else what
/// is missing ("libavcodec.so.59 cannot be loaded (…)"), the same answer on every later call.
const char *_Nullable homepwner_av_load(void);
/// The four libraries' file names, for messages: "libavutil.so.57, libswscale.so.6, …".
const char *_Nonnull homepwner_av_library_names(void);

static inline int homepwner_averror_eof(void) { return AVERROR_EOF; }
static inline int homepwner_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int homepwner_averror_exit(void) { return AVERROR_EXIT; }
static inline int64_t homepwner_nopts(void) { return AV_NOPTS_VALUE; }
static inline int homepwner_seek_size(void) { return AVSEEK_SIZE; }

/// The stream's display matrix (9 int32, 16.16 / 2.30 fixed point), or NULL when it has none.
const int32_t *_Nullable homepwner_display_matrix(const AVStream *_Nonnull stream);
/// The message of an FFmpeg error code.
void homepwner_error_string(int code, char *_Nonnull buffer, size_t size);
#endif
