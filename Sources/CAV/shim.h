#ifndef HOMEPWNER_CAV_SHIM_H
#define HOMEPWNER_CAV_SHIM_H
// FFmpeg's demuxers, decoders and pixel conversion (Debian's libavformat, libavcodec,
// libavutil, libswscale), for the Movie module only. The helpers below are what Swift cannot
// import from the headers: function-like macros, and side data whose API moved between
// FFmpeg versions.
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>

static inline int homepwner_averror_eof(void) { return AVERROR_EOF; }
static inline int homepwner_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int homepwner_averror_exit(void) { return AVERROR_EXIT; }
static inline int homepwner_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int64_t homepwner_nopts(void) { return AV_NOPTS_VALUE; }
static inline int homepwner_seek_size(void) { return AVSEEK_SIZE; }

// The stream's display matrix (9 int32, 16.16 / 2.30 fixed point), or NULL when it has none.
static inline const int32_t *homepwner_display_matrix(const AVStream *stream) {
#if LIBAVFORMAT_VERSION_MAJOR >= 61
    const AVPacketSideData *sd = av_packet_side_data_get(stream->codecpar->coded_side_data,
        stream->codecpar->nb_coded_side_data, AV_PKT_DATA_DISPLAYMATRIX);
    return sd && sd->size >= 36 ? (const int32_t *)sd->data : NULL;
#else
    size_t size = 0;
    const uint8_t *data = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
    return data && size >= 36 ? (const int32_t *)data : NULL;
#endif
}

// The message of an FFmpeg error code.
static inline void homepwner_error_string(int code, char *buffer, size_t size) {
    av_strerror(code, buffer, size);
}
#endif
