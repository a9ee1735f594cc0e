// The bare C baselines of `ops/bench thumbs` for PNG and HEIC originals: the Thumbnailer's
// work in plain C. Each file is decoded whole (neither format has a reduced-scale decode) to
// 8-bit RGB, a PNG by libspng (SPNG_FMT_RGB8, CRCs checked), a HEIC by libheif/libde265 (its
// primary image, transformations applied, one decoding thread, as heif-convert decodes it),
// then every size is resized and encoded exactly as thumbs.c does (`encodeSizes`, included).
// No alpha compositing (an RGBA PNG's alpha is dropped by the RGB8 decode), no limits checked,
// no ICC: what the C loop leaves out is what the Swift one pays for.
//
// thumbs-formats png|heic THREADS ROUNDS QUALITY SIZES(64,256,1024) FILE...
//   → "images <n> seconds <s> bytes <b>"
#define THUMBS_NO_MAIN
#include "thumbs.c"
#include <libheif/heif.h>
#include <spng.h>

static int heic;

static void thumbnailPNG(tjhandle encoder, const File *file, long long *bytes) {
    spng_ctx *context = spng_ctx_new(0);
    struct spng_ihdr ihdr;
    size_t size;
    if (spng_set_png_buffer(context, file->data, file->size) || spng_get_ihdr(context, &ihdr)
        || spng_decoded_image_size(context, SPNG_FMT_RGB8, &size)) {
        fprintf(stderr, "png header\n");
        exit(1);
    }
    unsigned char *pixels = malloc(size);
    int status = spng_decode_image(context, pixels, size, SPNG_FMT_RGB8, 0);
    if (status) { fprintf(stderr, "png decode: %s\n", spng_strerror(status)); exit(1); }
    spng_ctx_free(context);
    encodeSizes(encoder, pixels, 0, ihdr.width, ihdr.height, ihdr.width, ihdr.height, bytes);
    free(pixels);
}

static void thumbnailHEIC(tjhandle encoder, const File *file, long long *bytes) {
    struct heif_context *context = heif_context_alloc();
    heif_context_set_max_decoding_threads(context, 1);
    struct heif_image_handle *handle;
    struct heif_image *image;
    struct heif_error error = heif_context_read_from_memory_without_copy(context, file->data, file->size, NULL);
    if (error.code == heif_error_Ok) error = heif_context_get_primary_image_handle(context, &handle);
    if (error.code == heif_error_Ok) error = heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGB, NULL);
    if (error.code != heif_error_Ok) { fprintf(stderr, "heic: %s\n", error.message); exit(1); }
    int stride;
    const uint8_t *plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride);
    int w = heif_image_get_width(image, heif_channel_interleaved), h = heif_image_get_height(image, heif_channel_interleaved);
    encodeSizes(encoder, plane, stride, w, h, w, h, bytes);
    heif_image_release(image);
    heif_image_handle_release(handle);
    heif_context_free(context);
}

static void *formatWorker(void *argument) {
    int index = (int)(long)argument;
    tjhandle encoder = tjInitCompress();
    for (int round = 0; round < rounds; round++)
        for (int i = index; i < fileCount; i += threads)
            (heic ? thumbnailHEIC : thumbnailPNG)(encoder, &files[i], &outputBytes[index]);
    tjDestroy(encoder);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 7 || (strcmp(argv[1], "png") && strcmp(argv[1], "heic"))) {
        fprintf(stderr, "usage: thumbs-formats png|heic THREADS ROUNDS QUALITY SIZES FILE...\n");
        return 2;
    }
    heic = strcmp(argv[1], "heic") == 0;
    threads = atoi(argv[2]); rounds = atoi(argv[3]); quality = atoi(argv[4]);
    for (char *s = strtok(argv[5], ","); s && sizeCount < 16; s = strtok(NULL, ",")) sizes[sizeCount++] = atoi(s);
    fileCount = argc - 6;
    files = calloc(fileCount, sizeof(File));
    for (int i = 0; i < fileCount; i++) {
        FILE *f = fopen(argv[6 + i], "rb");
        if (!f) { perror(argv[6 + i]); return 1; }
        fseek(f, 0, SEEK_END);
        files[i].size = ftell(f);
        rewind(f);
        files[i].data = malloc(files[i].size);
        if (fread(files[i].data, 1, files[i].size, f) != files[i].size) { perror(argv[6 + i]); return 1; }
        fclose(f);
    }
    heif_init(NULL);
    pthread_t ids[64];
    double start = now();
    for (long t = 0; t < threads; t++) pthread_create(&ids[t], NULL, formatWorker, (void *)t);
    long long total = 0;
    for (int t = 0; t < threads; t++) { pthread_join(ids[t], NULL); total += outputBytes[t]; }
    printf("images %d seconds %.3f bytes %lld\n", fileCount * rounds, now() - start, total);
    return 0;
}
