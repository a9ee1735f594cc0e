import CAV
import JPEG

/// The decode that finds a poster: the stream's decoder opened on one thread with the pixel
/// limit, a seek to the key frame before `Movie.posterTime`, and packets read and decoded until
/// the poster is chosen (see `Movie`), every count checked against `MovieLimits` as it grows.
final class PosterSearch {
    let demuxer: MovieDemuxer
    let limits: MovieLimits
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>? = hp_av_packet_alloc()
    private var frame: UnsafeMutablePointer<AVFrame>? = hp_av_frame_alloc()
    /// The last frame before the poster time (a short movie's poster), and the first at or past
    /// it, black (kept while a later one is looked for).
    private var last: UnsafeMutablePointer<AVFrame>? = hp_av_frame_alloc()
    private var firstBlack: UnsafeMutablePointer<AVFrame>? = hp_av_frame_alloc()
    private var haveLast = false, haveFirstBlack = false
    private var packets = 0, frames = 0, blackFrames = 0
    /// The decoder's first refusal, for the error when no frame comes out.
    private var decodeError: String?

    init(demuxer: MovieDemuxer, limits: MovieLimits) {
        self.demuxer = demuxer
        self.limits = limits
    }

    deinit {
        hp_avcodec_free_context(&codec)
        hp_av_packet_free(&packet)
        hp_av_frame_free(&frame)
        hp_av_frame_free(&last)
        hp_av_frame_free(&firstBlack)
    }

    /// The poster.
    func run() throws(MovieError) -> Poster {
        guard packet != nil, frame != nil, last != nil, firstBlack != nil else { throw MovieError(.overLimit, "no memory for a frame") }
        try openDecoder()
        let stream = demuxer.stream
        let timeBase = stream.pointee.time_base
        let start = stream.pointee.start_time == homepwner_nopts() ? 0 : stream.pointee.start_time
        let target = start + hp_av_rescale_q(Int64(Movie.posterTime * 1_000_000), AVRational(num: 1, den: 1_000_000), timeBase)
        if let duration = demuxer.info.duration, duration > Movie.posterTime {
            // To the key frame at or before the poster time; a movie that cannot seek is read
            // from its start.
            _ = hp_av_seek_frame(demuxer.format, demuxer.streamIndex, target, AVSEEK_FLAG_BACKWARD)
        }
        var chosen: UnsafeMutablePointer<AVFrame>?
        var reachedEnd = false
        search: while chosen == nil {
            if let over = MovieDemuxer.stopped(demuxer.input) { throw over }
            if demuxer.input.expired() { throw MovieDemuxer.stopped(demuxer.input)! }
            let read = hp_av_read_frame(demuxer.format, packet)
            if read < 0 {
                if let over = MovieDemuxer.stopped(demuxer.input) { throw over }
                // The end (or a read error: what was decoded so far still counts): drain.
                reachedEnd = true
                _ = hp_avcodec_send_packet(codec, nil)
            } else {
                packets += 1
                defer { hp_av_packet_unref(packet) }
                guard packets <= limits.maxPackets else {
                    if haveFirstBlack { break search }
                    throw MovieError(
                        .overLimit,
                        "no poster within \(limits.maxPackets) packets read (MovieLimits.maxPackets; \(frames) video frames decoded)")
                }
                guard packet!.pointee.stream_index == demuxer.streamIndex else { continue }
                let sent = hp_avcodec_send_packet(codec, packet)
                if sent < 0, sent != homepwner_averror_eagain() {
                    decodeError = decodeError ?? "packet \(packets) at byte \(packet!.pointee.pos): \(Movie.describe(sent))"
                    continue
                }
            }
            while chosen == nil {
                let received = hp_avcodec_receive_frame(codec, frame)
                if received == homepwner_averror_eagain() || received == homepwner_averror_eof() { break }
                if received < 0 {
                    decodeError = decodeError ?? Movie.describe(received)
                    break
                }
                frames += 1
                chosen = try consider(frame!, target: target)
                hp_av_frame_unref(frame)
                if chosen == nil, frames >= limits.maxFrames {
                    if haveFirstBlack { break search }
                    throw MovieError(
                        .overLimit,
                        "no poster within \(limits.maxFrames) decoded frames (MovieLimits.maxFrames; \(packets) packets read)")
                }
            }
            if reachedEnd { break }
        }
        if chosen == nil {
            if haveFirstBlack {
                chosen = firstBlack
            } else if haveLast {
                chosen = last
            } else {
                let why = decodeError.map { "the decoder refused \($0)" } ?? "no video packet decoded to a frame"
                throw MovieError(.noFrame, "no frame of its \(demuxer.info.codec) video stream decodes (\(packets) packets read; \(why))")
            }
        }
        let allBlack = chosen == firstBlack
        let picture = try FrameConversion.rgb(chosen!, limits: limits)
        let time = Double((chosen!.pointee.best_effort_timestamp == homepwner_nopts() ? start : chosen!.pointee.best_effort_timestamp) - start)
            * av_q2d(timeBase)
        return Poster(
            image: picture.oriented(demuxer.info.orientation), time: time, info: demuxer.info, framesDecoded: frames,
            packetsRead: packets, bytesRead: demuxer.input.bytesFetched, skippedBlack: haveFirstBlack && !allBlack, allBlack: allBlack)
    }

    /// Whether `frame` is the poster: the first at or past `target` that is not black; else it
    /// is kept as the last before it, or the first black one at it.
    private func consider(_ frame: UnsafeMutablePointer<AVFrame>, target: Int64) throws(MovieError) -> UnsafeMutablePointer<AVFrame>? {
        try FrameConversion.checkSize(frame, limits: limits)
        let pts = frame.pointee.best_effort_timestamp
        if pts != homepwner_nopts(), pts < target {
            hp_av_frame_unref(last)
            haveLast = hp_av_frame_ref(last, frame) >= 0
            return nil
        }
        if try !FrameConversion.isBlack(frame) {
            // The poster: moved into `last`, which is freed with the search.
            hp_av_frame_unref(last)
            hp_av_frame_move_ref(last, frame)
            haveLast = true
            return last
        }
        blackFrames += 1
        if !haveFirstBlack {
            haveFirstBlack = hp_av_frame_ref(firstBlack, frame) >= 0
        } else if blackFrames > limits.maxBlackFrames {
            return firstBlack
        }
        return nil
    }

    /// The stream's decoder, one thread, the pixel limit set in it.
    private func openDecoder() throws(MovieError) {
        let info = demuxer.info
        guard let name = Movie.decoders[info.codec], let decoder = hp_avcodec_find_decoder_by_name(name) else {
            throw MovieError(.unsupportedCodec(info.codec), "this FFmpeg has no \(Movie.decoders[info.codec] ?? info.codec) decoder for its \(info.codec) video")
        }
        codec = hp_avcodec_alloc_context3(decoder)
        guard let codec else { throw MovieError(.overLimit, "no memory for the decoder") }
        guard hp_avcodec_parameters_to_context(codec, demuxer.stream.pointee.codecpar) >= 0 else {
            throw MovieError(.damaged, "its \(info.codec) stream's parameters do not make a decoder")
        }
        codec.pointee.thread_count = 1
        codec.pointee.max_pixels = Int64(limits.maxPixels)
        codec.pointee.pkt_timebase = demuxer.stream.pointee.time_base
        var options: OpaquePointer?
        hp_av_dict_set(&options, "codec_whitelist", Movie.decoders.values.sorted().joined(separator: ","), 0)
        hp_av_dict_set(&options, "threads", "1", 0)
        let opened = hp_avcodec_open2(codec, decoder, &options)
        hp_av_dict_free(&options)
        guard opened >= 0 else {
            throw MovieError(.damaged, "its \(info.codec) decoder does not open on the stream's parameters (\(Movie.describe(opened)))")
        }
    }
}
