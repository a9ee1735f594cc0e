// The bare libjpeg-turbo baseline of `ops/bench capture`: a capture's pixel work in plain C.
// The photo is decoded whole with TurboJPEG (full size, RGB), its centred square copied out
// (the SQUARE edit), and that encoded at quality 90, 4:2:0. No structure walk, no EXIF, no ICC,
// no checksum, no storing: what the C loop leaves out is what the suite pays for end to end.
//
// capture THREADS ROUNDS FILE  → "captures <n> seconds <s> bytes <b>"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>

static unsigned char *data;
static unsigned long size;
static int rounds;
static long long bytes[64];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *work(void *arg) {
    int index = (int)(long)arg;
    tjhandle decoder = tjInitDecompress(), encoder = tjInitCompress();
    for (int round = 0; round < rounds; round++) {
        int width, height, subsampling, colorspace;
        if (tjDecompressHeader3(decoder, data, size, &width, &height, &subsampling, &colorspace) != 0) {
            fprintf(stderr, "header: %s\n", tjGetErrorStr2(decoder));
            exit(1);
        }
        unsigned char *pixels = malloc((size_t)width * height * 3);
        if (tjDecompress2(decoder, data, size, pixels, width, 0, height, TJPF_RGB, 0) != 0) {
            fprintf(stderr, "decode: %s\n", tjGetErrorStr2(decoder));
            exit(1);
        }
        int side = width < height ? width : height, left = (width - side) / 2, top = (height - side) / 2;
        unsigned char *square = malloc((size_t)side * side * 3);
        for (int row = 0; row < side; row++)
            memcpy(square + (size_t)row * side * 3, pixels + ((size_t)(top + row) * width + left) * 3, (size_t)side * 3);
        unsigned char *jpeg = NULL;
        unsigned long jpegSize = 0;
        if (tjCompress2(encoder, square, side, 0, side, TJPF_RGB, &jpeg, &jpegSize, TJSAMP_420, 90, 0) != 0) {
            fprintf(stderr, "encode: %s\n", tjGetErrorStr2(encoder));
            exit(1);
        }
        bytes[index] += jpegSize;
        tjFree(jpeg);
        free(square);
        free(pixels);
    }
    tjDestroy(decoder);
    tjDestroy(encoder);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: capture THREADS ROUNDS FILE\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    rounds = atoi(argv[2]);
    FILE *file = fopen(argv[3], "rb");
    if (!file) { perror(argv[3]); return 1; }
    fseek(file, 0, SEEK_END);
    size = ftell(file);
    fseek(file, 0, SEEK_SET);
    data = malloc(size);
    if (fread(data, 1, size, file) != size) { perror("read"); return 1; }
    fclose(file);
    pthread_t workers[64];
    double start = now();
    for (int t = 0; t < threads; t++) pthread_create(&workers[t], NULL, work, (void *)(long)t);
    long long total = 0;
    for (int t = 0; t < threads; t++) { pthread_join(workers[t], NULL); total += bytes[t]; }
    printf("captures %d seconds %.4f bytes %lld\n", threads * rounds, now() - start, total);
    return 0;
}
