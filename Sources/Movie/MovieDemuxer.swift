import CAV

/// A movie opened for its poster: libavformat's demuxer over `MovieInput`, the first video
/// stream chosen and checked (codec, coded size, index within the data) before any decoder
/// exists. Freed when released.
final class MovieDemuxer {
    let input: MovieInput
    private(set) var format: UnsafeMutablePointer<AVFormatContext>?
    /// The chosen stream's index and what it is.
    let streamIndex: Int32
    let info: MovieInfo
    let limits: MovieLimits

    var stream: UnsafeMutablePointer<AVStream> { format!.pointee.streams[Int(streamIndex)]! }

    init(_ data: UnsafeRawBufferPointer, limits: MovieLimits) throws(MovieError) {
        self.limits = limits
        try Movie.loadFFmpeg()
        hp_av_log_set_level(AV_LOG_QUIET)
        guard let name = Movie.demuxer(for: UnsafeRawBufferPointer(rebasing: data.prefix(16))) else {
            throw MovieError(
                .unsupportedContainer,
                "its first bytes are not an ISO BMFF/QuickTime box or a Matroska/WebM header; posters are made from MP4, MOV, 3GP, Matroska and WebM")
        }
        input = MovieInput(data, maxBytes: limits.maxBytes, deadline: .now + .milliseconds(Int64(limits.seconds * 1000)))
        guard let io = input.open(), var context = hp_avformat_alloc_context() else {
            input.close()
            throw MovieError(.overLimit, "no memory for the demuxer")
        }
        context.pointee.pb = io
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        context.pointee.interrupt_callback = input.interrupt
        var options: OpaquePointer?
        hp_av_dict_set(&options, "format_whitelist", Movie.formatWhitelist, 0)
        hp_av_dict_set(&options, "protocol_whitelist", "none", 0)
        hp_av_dict_set(&options, "codec_whitelist", Movie.decoders.keys.sorted().joined(separator: ","), 0)
        var contextOrNil: UnsafeMutablePointer<AVFormatContext>? = context
        let opened = hp_avformat_open_input(&contextOrNil, nil, hp_av_find_input_format(name), &options)
        hp_av_dict_free(&options)
        guard opened >= 0, let openedContext = contextOrNil else {
            // avformat_open_input frees the context on failure; the AVIO context is ours.
            let error = Self.openError(opened, input: input, container: name)
            input.close()
            throw error
        }
        context = openedContext
        format = context
        // From here on `deinit` frees both.
        do throws(MovieError) {
            let (index, info) = try Self.chooseStream(context, limits: limits, data: data)
            streamIndex = index
            self.info = info
        } catch {
            streamIndex = -1
            info = MovieInfo(container: "", codec: "", width: 0, height: 0, orientation: 1)
            throw error
        }
    }

    deinit {
        if format != nil { hp_avformat_close_input(&format) }
        input.close()
    }

    /// What a failed open says: the budget it ran out of, or the container's parse error.
    private static func openError(_ code: Int32, input: MovieInput, container: String) -> MovieError {
        if let limit = overLimit(input) { return limit }
        let what = container == "mov" ? "ISO BMFF/QuickTime" : "Matroska/WebM"
        let hint = container == "mov"
            ? "no readable moov box (the movie's index): cut short before it, or not a movie after its first box"
            : "no readable segment header or tracks: cut short, or not a movie after its first bytes"
        return MovieError(.damaged, "its \(what) container does not parse (\(Movie.describe(code)); \(hint))")
    }

    /// The error for a read stopped by `MovieLimits`, if one was.
    static func overLimit(_ input: MovieInput) -> MovieError? {
        switch input.stoppedFor {
        case "bytes":
            MovieError(.overLimit, "finding its poster read more than \(input.maxBytes) bytes (MovieLimits.maxBytes)")
        case "time":
            MovieError(.overLimit, "finding its poster took longer than its time budget (MovieLimits.seconds)")
        default: nil
        }
    }

    /// The first video stream that is not a cover picture, its codec one of `Movie.decoders`,
    /// its size under the limit, and (for ISO BMFF) its samples inside the data.
    private static func chooseStream(
        _ context: UnsafeMutablePointer<AVFormatContext>, limits: MovieLimits, data: UnsafeRawBufferPointer
    ) throws(MovieError) -> (Int32, MovieInfo) {
        let count = Int(context.pointee.nb_streams)
        var kinds: [String] = []
        var chosen: Int?
        for index in 0..<count {
            guard let stream = context.pointee.streams[index], let parameters = stream.pointee.codecpar else { continue }
            let type = parameters.pointee.codec_type
            let codec = hp_avcodec_get_name(parameters.pointee.codec_id).map { String(cString: $0) } ?? "unknown"
            let typeName = hp_av_get_media_type_string(type).map { String(cString: $0) } ?? "unknown"
            let cover = stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC != 0
            kinds.append("\(typeName) \(codec)\(cover ? " (cover picture)" : "")")
            if chosen == nil, type == AVMEDIA_TYPE_VIDEO, !cover { chosen = index }
        }
        guard let index = chosen, let stream = context.pointee.streams[index], let parameters = stream.pointee.codecpar else {
            let streams = kinds.isEmpty ? "none" : kinds.joined(separator: ", ")
            throw MovieError(.noVideoStream, "it has no video stream to take a poster from (its streams: \(streams))")
        }
        let container = context.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "unknown"
        let codec = hp_avcodec_get_name(parameters.pointee.codec_id).map { String(cString: $0) } ?? "unknown"
        guard Movie.decoders[codec] != nil else {
            throw MovieError(
                .unsupportedCodec(codec),
                "its video stream \(index) is \(codec); posters are decoded from \(Movie.decoders.keys.sorted().joined(separator: ", ")) only")
        }
        let width = Int(parameters.pointee.width), height = Int(parameters.pointee.height)
        guard width > 0, height > 0, width.multipliedReportingOverflow(by: height).partialValue <= limits.maxPixels,
              !width.multipliedReportingOverflow(by: height).overflow
        else {
            if width <= 0 || height <= 0 {
                throw MovieError(.damaged, "its video stream \(index) (\(codec)) declares no size (\(width)×\(height))")
            }
            throw MovieError(
                .tooManyPixels(width: width, height: height, limit: limits.maxPixels),
                "its video stream \(index) (\(codec)) of \(width)×\(height) = \(width * height) pixels is over the limit of \(limits.maxPixels) pixels (--max-pixels)")
        }
        if container.hasPrefix("mov") { try checkSamplesInside(context, size: Int64(data.count)) }
        var orientation = 1
        if let matrix = homepwner_display_matrix(stream) {
            orientation = DisplayMatrix.orientation(Array(UnsafeBufferPointer(start: matrix, count: 9)))
        }
        var duration: Double?
        if stream.pointee.duration > 0 {
            duration = Double(stream.pointee.duration) * av_q2d(stream.pointee.time_base)
        } else if context.pointee.duration > 0 {
            duration = Double(context.pointee.duration) / Double(AV_TIME_BASE)
        }
        let info = MovieInfo(container: container, codec: codec, width: width, height: height, orientation: orientation, duration: duration)
        return (Int32(index), info)
    }

    /// An ISO BMFF movie whose index (its `moov` box, read whole by the demuxer) places a
    /// sample of any stream past the end of the data was cut short: refused before decoding,
    /// naming where its samples end.
    private static func checkSamplesInside(_ context: UnsafeMutablePointer<AVFormatContext>, size: Int64) throws(MovieError) {
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let stream = context.pointee.streams[index] else { continue }
            let entries = hp_avformat_index_get_entries_count(stream)
            var end: Int64 = 0
            for entry in 0..<entries {
                guard let sample = hp_avformat_index_get_entry(stream, entry) else { continue }
                end = max(end, sample.pointee.pos + Int64(sample.pointee.size))
            }
            if end > size {
                throw MovieError(
                    .truncated,
                    "its index places samples of stream \(index) up to byte \(end), but the data has \(size) bytes: cut short by \(end - size) bytes")
            }
        }
    }
}
