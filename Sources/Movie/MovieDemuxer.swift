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

    init(_ source: any MovieSource, limits: MovieLimits) throws(MovieError) {
        self.limits = limits
        try Movie.loadFFmpeg()
        hp_av_log_set_level(AV_LOG_QUIET)
        input = MovieInput(source, maxBytes: limits.maxBytes, deadline: .now + .milliseconds(Int64(limits.seconds * 1000)))
        let head: [UInt8]
        do throws(MovieReadStop) {
            head = try input.head(16)
        } catch {
            throw Self.stopped(input)!
        }
        guard let name = head.withUnsafeBytes({ Movie.demuxer(for: $0) }) else {
            throw MovieError(
                .unsupportedContainer,
                "its first bytes are not an ISO BMFF/QuickTime box or a Matroska/WebM header; posters are made from MP4, MOV, 3GP, Matroska and WebM")
        }
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
        // The headers and index the demuxer holds in memory while the poster is found: what it
        // reads to open the container is bounded by maxIndexBytes.
        input.maxBytesRead = limits.maxIndexBytes
        let opened = hp_avformat_open_input(&contextOrNil, nil, hp_av_find_input_format(name), &options)
        hp_av_dict_free(&options)
        let indexBytes = input.bytesRead
        input.maxBytesRead = nil
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
            // Opened on what was read before a limit or a failed read: not to be trusted.
            if let stopped = Self.stopped(input) { throw stopped }
            let (index, info) = try Self.chooseStream(context, limits: limits, size: input.size, indexBytes: indexBytes)
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

    /// What a failed open says: the budget it ran out of, the read that failed, or the
    /// container's parse error.
    private static func openError(_ code: Int32, input: MovieInput, container: String) -> MovieError {
        if let stopped = stopped(input) { return stopped }
        let what = container == "mov" ? "ISO BMFF/QuickTime" : "Matroska/WebM"
        let hint = container == "mov"
            ? "no readable moov box (the movie's index): cut short before it, or not a movie after its first box"
            : "no readable segment header or tracks: cut short, or not a movie after its first bytes"
        return MovieError(.damaged, "its \(what) container does not parse (\(Movie.describe(code)); \(hint))")
    }

    /// The error for a read stopped by `MovieLimits` or failed, if one was.
    static func stopped(_ input: MovieInput) -> MovieError? {
        switch input.stopped {
        case .bytes?:
            MovieError(.overLimit, "finding its poster read more than \(input.maxBytes) bytes (MovieLimits.maxBytes)")
        case .index(let limit)?:
            MovieError(
                .indexOverLimit(limit: limit),
                "opening its container read more than \(limit) bytes before its index was whole (MovieLimits.maxIndexBytes: the demuxer holds the index in memory while the poster is found)")
        case .time?:
            MovieError(.overLimit, "finding its poster took longer than its time budget (MovieLimits.seconds)")
        case .failed(let why)?:
            MovieError(.unreadable, why)
        case nil: nil
        }
    }

    /// The first video stream that is not a cover picture, its codec one of `Movie.decoders`,
    /// its size under the limit, and (for ISO BMFF) its samples inside the data.
    private static func chooseStream(
        _ context: UnsafeMutablePointer<AVFormatContext>, limits: MovieLimits, size: Int64, indexBytes: Int64
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
        if container.hasPrefix("mov") { try checkSamplesInside(context, size: size) }
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
        let info = MovieInfo(
            container: container, codec: codec, width: width, height: height, orientation: orientation, duration: duration,
            indexBytes: indexBytes)
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
