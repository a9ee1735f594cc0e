// The bare libjpeg-turbo baseline of `ops/bench thumbs`: the Thumbnailer's work in plain C.
// Each JPEG is decoded once with TurboJPEG at the smallest DCT scale of 1/2, 1/4 and 1/8 (those
// libjpeg-turbo has SIMD code for) that leaves at least twice the largest FIT size; each size is
// shrunk with Catmull-Rom (row by row in float, as RGBImage.resized), largest first, from the
// smallest size made already with twice its pixels in each dimension, else from the decode; and
// encoded 4:2:0 as Thumbnailer.encodeKeepingStructure does: baseline trials up the quality
// ladder (the quality asked for, 8 more at 128 pixels or less, up by 3, then 95), each decoded
// back to RGB and its luma compared with the input's by 8×8 block SSIM (windows 4 pixels in)
// until it keeps 0.97 (0.965 from 512 pixels), then one progressive encode at that quality.
// No EXIF orientation, no ICC and no structure walk: what the C loop leaves out is what the
// Swift one pays for.
//
// With THUMBS_AREA=1 in the environment it does the work of the pipeline before 2026-12-07
// instead (area average, one baseline encode at the quality asked for), so a run shows what the
// sharper thumbnails cost.
//
// thumbs THREADS ROUNDS QUALITY SIZES(64,256,1024) FILE...  → "images <n> seconds <s> bytes <b>"
//
// thumbs_formats.c includes this file with THUMBS_NO_MAIN for its resize and its sizes
// (`encodeSizes`), and decodes PNG and HEIC instead.
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>

typedef struct { unsigned char *data; unsigned long size; } File;
static File *files;
static int fileCount, threads, rounds, quality, sizeCount, sizes[16], area;
static long long outputBytes[64];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

// One axis of a shrinking resize: per output sample its first source sample, its taps and their
// weights: Catmull-Rom over two output pixels each side, normalised (as ResampleAxis), or with
// `area` the overlap of the output's footprint with each source sample.
typedef struct { int *first, *taps, stride; float *weights; } Axis;

static double catmullRom(double x) {
    x = fabs(x);
    if (x < 1) return (1.5 * x - 2.5) * x * x + 1;
    if (x < 2) return (((x - 5) * x + 8) * x - 4) * -0.5;
    return 0;
}

static Axis axis(int source, int destination) {
    Axis a;
    double scale = (double)source / destination;
    a.stride = area ? (int)ceil(scale) + 1 : (int)ceil(4 * scale) + 2;
    a.first = calloc(destination, sizeof(int));
    a.taps = calloc(destination, sizeof(int));
    a.weights = calloc((size_t)destination * a.stride, sizeof(float));
    for (int o = 0; o < destination; o++) {
        float *w = a.weights + (size_t)o * a.stride;
        if (area) {
            double left = o * scale, right = fmin(source, (o + 1) * scale);
            int begin = (int)floor(left), end = (int)fmin(source, ceil(right));
            a.first[o] = begin;
            a.taps[o] = end - begin;
            for (int i = begin; i < end; i++) w[i - begin] = (float)((fmin(right, i + 1) - fmax(left, i)) / scale);
        } else {
            double centre = (o + 0.5) * scale, support = 2 * scale, total = 0, raw[a.stride];
            int begin = (int)fmax(0, floor(centre - support + 0.5)), end = (int)fmin(source, floor(centre + support + 0.5));
            for (int i = begin; i < end; i++) total += raw[i - begin] = catmullRom((i + 0.5 - centre) / scale);
            a.first[o] = begin;
            a.taps[o] = end - begin;
            for (int i = begin; i < end; i++) w[i - begin] = (float)(raw[i - begin] / total);
        }
    }
    return a;
}

static void freeAxis(Axis a) { free(a.first); free(a.taps); free(a.weights); }

static unsigned char *resize(const unsigned char *src, int sourceStride, int sw, int sh, int dw, int dh) {
    // Row by row, as RGBImage.resized: the source rows under an output row weighted into one
    // row of float at the source's width (a contiguous loop the compiler vectorizes), then
    // averaged across to the new width and rounded once.
    Axis h = axis(sw, dw), v = axis(sh, dh);
    int sourceLength = sw * 3, length = dw * 3;
    if (sourceStride == 0) sourceStride = sourceLength;
    unsigned char *out = malloc((size_t)length * dh);
    float *sum = malloc(sourceLength * sizeof(float));
    for (int y = 0; y < dh; y++) {
        const float *vw = v.weights + (size_t)y * v.stride;
        const unsigned char *row = src + (size_t)v.first[y] * sourceStride;
        for (int i = 0; i < sourceLength; i++) sum[i] = row[i] * vw[0];
        for (int k = 1; k < v.taps[y]; k++) {
            row += sourceStride;
            for (int i = 0; i < sourceLength; i++) sum[i] += row[i] * vw[k];
        }
        unsigned char *t = out + (size_t)y * length;
        for (int x = 0; x < dw; x++) {
            float r = 0, g = 0, b = 0;
            const float *p = sum + (size_t)h.first[x] * 3;
            const float *w = h.weights + (size_t)x * h.stride;
            for (int k = 0; k < h.taps[x]; k++, p += 3) { r += p[0] * w[k]; g += p[1] * w[k]; b += p[2] * w[k]; }
            t[x * 3] = (unsigned char)fminf(fmaxf(r + 0.5f, 0), 255);
            t[x * 3 + 1] = (unsigned char)fminf(fmaxf(g + 0.5f, 0), 255);
            t[x * 3 + 2] = (unsigned char)fminf(fmaxf(b + 0.5f, 0), 255);
        }
    }
    free(sum); freeAxis(h); freeAxis(v);
    return out;
}

static void encodeSizes(tjhandle encoder, const unsigned char *pixels, int stride, int w, int h, int dw, int dh, long long *bytes);

// The luma libjpeg's encoder computes (16-bit fixed point, rounded) of w × h RGB, rows `stride` apart.
static void luma(const unsigned char *rgb, int stride, int w, int h, unsigned char *out) {
    if (stride == 0) stride = w * 3;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const unsigned char *p = rgb + (size_t)y * stride + x * 3;
            out[(size_t)y * w + x] = (unsigned char)((19595 * p[0] + 38470 * p[1] + 7471 * p[2] + 32768) >> 16);
        }
}

// Mean SSIM of two luma planes over whole 8×8 windows starting 4 pixels in (one window of the
// whole image under 12 pixels on an edge), as EncodeFidelity.blockSSIM.
static double blockSSIM(const unsigned char *a, const unsigned char *b, int w, int h) {
    int whole = !(w >= 12 && h >= 12), bw = whole ? w : 8, bh = whole ? h : 8, offset = whole ? 0 : 4;
    int across = (w - offset) / bw, down = (h - offset) / bh;
    double n = (double)bw * bh, total = 0;
    for (int by = 0; by < down; by++)
        for (int bx = 0; bx < across; bx++) {
            long sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
            for (int y = offset + by * bh; y < offset + (by + 1) * bh; y++)
                for (int x = offset + bx * bw; x < offset + (bx + 1) * bw; x++) {
                    int p = a[(size_t)y * w + x], q = b[(size_t)y * w + x];
                    sa += p; sb += q; saa += p * p; sbb += q * q; sab += p * q;
                }
            double ma = sa / n, mb = sb / n, va = saa / n - ma * ma, vb = sbb / n - mb * mb, cab = sab / n - ma * mb;
            total += ((2 * ma * mb + 6.5025) * (2 * cab + 58.5225)) / ((ma * ma + mb * mb + 6.5025) * (va + vb + 58.5225));
        }
    return total / (across * down);
}

// The quality Thumbnailer.encodeKeepingStructure settles on for w × h RGB.
// Its own encoder: a TurboJPEG 2.1 handle that has encoded progressive keeps the scan script, so
// a later baseline encode on it writes progressive scans with the default Huffman tables.
static int ladderQuality(const unsigned char *rgb, int stride, int w, int h) {
    if (quality >= 95) return quality;
    int first = (w > h ? w : h) <= 128 ? quality + 8 : quality;
    if (first > 95) first = 95;
    double kept = (w > h ? w : h) >= 512 ? 0.965 : 0.97;
    unsigned char *input = malloc((size_t)w * h), *decoded = malloc((size_t)w * h * 3), *output = malloc((size_t)w * h);
    luma(rgb, stride, w, h, input);
    tjhandle encoder = tjInitCompress(), decoder = tjInitDecompress();
    int chosen = 95;
    for (int rung = first; rung < 95; rung += 3) {
        unsigned char *jpeg = NULL;
        unsigned long size = 0;
        if (tjCompress2(encoder, rgb, w, stride, h, TJPF_RGB, &jpeg, &size, TJSAMP_420, rung, 0) ||
            tjDecompress2(decoder, jpeg, size, decoded, w, 0, h, TJPF_RGB, 0)) {
            fprintf(stderr, "ladder: %s\n", tjGetErrorStr2(NULL));
            exit(1);
        }
        tjFree(jpeg);
        luma(decoded, 0, w, h, output);
        if (blockSSIM(input, output, w, h) >= kept) { chosen = rung; break; }
    }
    tjDestroy(encoder);
    tjDestroy(decoder);
    free(input); free(decoded); free(output);
    return chosen;
}

__attribute__((unused)) static void thumbnail(tjhandle decoder, tjhandle encoder, const File *file, long long *bytes) {
    int w, h, subsampling, colorspace;
    if (tjDecompressHeader3(decoder, file->data, file->size, &w, &h, &subsampling, &colorspace)) {
        fprintf(stderr, "header: %s\n", tjGetErrorStr2(decoder));
        exit(1);
    }
    int largest = 0;
    for (int i = 0; i < sizeCount; i++) if (sizes[i] > largest) largest = sizes[i];
    double scale = fmin(1, 2 * fmin((double)largest / w, (double)largest / h));
    int tw = (int)ceil(w * scale), th = (int)ceil(h * scale);
    int count, dw = w, dh = h;
    tjscalingfactor *factors = tjGetScalingFactors(&count);
    for (int i = 0; i < count; i++) {
        int sw = TJSCALED(w, factors[i]), sh = TJSCALED(h, factors[i]);
        if (factors[i].num == 1 && factors[i].denom > 1 && sw >= tw && sh >= th && sw * sh < dw * dh) { dw = sw; dh = sh; }
    }
    unsigned char *pixels = malloc((size_t)dw * dh * 3);
    if (tjDecompress2(decoder, file->data, file->size, pixels, dw, 0, dh, TJPF_RGB, TJFLAG_LIMITSCANS)) {
        fprintf(stderr, "decode: %s\n", tjGetErrorStr2(decoder));
        exit(1);
    }
    encodeSizes(encoder, pixels, 0, w, h, dw, dh, bytes);
    free(pixels);
}

// Every size of a picture of w × h decoded at dw × dh (rows `stride` bytes apart, 0 = dw × 3),
// encoded and counted in *bytes.
static void encodeSizes(tjhandle encoder, const unsigned char *pixels, int stride, int w, int h, int dw, int dh, long long *bytes) {
    // Largest first: each size is averaged from the smallest one made already that has at
    // least twice its pixels in each dimension, else from the decode (as the Thumbnailer does).
    int order[16], made = 0;
    unsigned char *images[16];
    int widths[16], heights[16];
    for (int i = 0; i < sizeCount; i++) order[i] = i;
    for (int i = 1; i < sizeCount; i++)
        for (int j = i; j > 0 && sizes[order[j]] > sizes[order[j - 1]]; j--) { int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t; }
    for (int k = 0; k < sizeCount; k++) {
        int i = order[k];
        double fit = fmin(1, fmin((double)sizes[i] / w, (double)sizes[i] / h));
        int ow = (int)fmax(1, round(w * fit)), oh = (int)fmax(1, round(h * fit));
        const unsigned char *source = pixels;
        int sw = dw, sh = dh, sourceStride = stride;
        for (int m = 0; m < made; m++)
            if (widths[m] >= 2 * ow && heights[m] >= 2 * oh && widths[m] * heights[m] < sw * sh) { source = images[m]; sw = widths[m]; sh = heights[m]; sourceStride = 0; }
        unsigned char *small = (ow == sw && oh == sh) ? (unsigned char *)source : resize(source, sourceStride, sw, sh, ow, oh);
        int smallStride = small == source ? sourceStride : 0;
        int chosen = area ? quality : ladderQuality(small, smallStride, ow, oh);
        unsigned char *jpeg = NULL;
        unsigned long size = 0;
        if (tjCompress2(encoder, small, ow, smallStride, oh, TJPF_RGB, &jpeg, &size, TJSAMP_420, chosen, area ? 0 : TJFLAG_PROGRESSIVE)) {
            fprintf(stderr, "encode: %s\n", tjGetErrorStr2(encoder));
            exit(1);
        }
        *bytes += size;
        tjFree(jpeg);
        if (small != source) { images[made] = small; widths[made] = ow; heights[made] = oh; made++; }
    }
    for (int m = 0; m < made; m++) free(images[m]);
}

#ifndef THUMBS_NO_MAIN
static void *worker(void *argument) {
    int index = (int)(long)argument;
    tjhandle decoder = tjInitDecompress(), encoder = tjInitCompress();
    for (int round = 0; round < rounds; round++)
        for (int i = index; i < fileCount; i += threads) thumbnail(decoder, encoder, &files[i], &outputBytes[index]);
    tjDestroy(decoder);
    tjDestroy(encoder);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: thumbs THREADS ROUNDS QUALITY SIZES FILE...\n"); return 2; }
    threads = atoi(argv[1]); rounds = atoi(argv[2]); quality = atoi(argv[3]);
    area = getenv("THUMBS_AREA") && !strcmp(getenv("THUMBS_AREA"), "1");
    for (char *s = strtok(argv[4], ","); s && sizeCount < 16; s = strtok(NULL, ",")) sizes[sizeCount++] = atoi(s);
    fileCount = argc - 5;
    files = calloc(fileCount, sizeof(File));
    for (int i = 0; i < fileCount; i++) {
        FILE *f = fopen(argv[5 + i], "rb");
        if (!f) { perror(argv[5 + i]); return 1; }
        fseek(f, 0, SEEK_END);
        files[i].size = ftell(f);
        rewind(f);
        files[i].data = malloc(files[i].size);
        if (fread(files[i].data, 1, files[i].size, f) != files[i].size) { perror(argv[5 + i]); return 1; }
        fclose(f);
    }
    pthread_t ids[64];
    double start = now();
    for (long t = 0; t < threads; t++) pthread_create(&ids[t], NULL, worker, (void *)t);
    long long bytes = 0;
    for (int t = 0; t < threads; t++) { pthread_join(ids[t], NULL); bytes += outputBytes[t]; }
    printf("images %d seconds %.3f bytes %lld\n", fileCount * rounds, now() - start, bytes);
    return 0;
}
#endif
