import JPEG
import Proto

extension ImageStore {
    /// A movie's rendition, from the poster thumbnails the thumbnail worker made of it (its
    /// poster frame, upright, as JPEGs): the stored one of the result's size when there is one,
    /// else rendered from the largest as a JPEG original is (so FIT is never larger than that
    /// poster). The movie itself is never decoded here: hostile video is decoded by the worker,
    /// away from the service that holds the blobs. With no poster yet, FAILED_PRECONDITION says
    /// how to get one. `source` is the movie's row; `info` is the movie's with the
    /// rendition's size and checksum, or a stored poster's own.
    func posterRendition(
        of movie: ImageInfo, width: Int, height: Int, mode: RenditionMode, abandoned: @escaping @Sendable () -> Bool
    ) async throws -> (info: ImageInfo, data: [UInt8], source: ImageInfo) {
        let movieKey = movie.key
        let posters = try await indexRead { try $0.children(of: movieKey) }.filter {
            $0.kind == .thumbnail && $0.contentType == "image/jpeg" && $0.orientation <= 1 && $0.width > 0 && $0.height > 0
        }
        guard let largest = posters.max(by: { Int($0.width) * Int($0.height) < Int($1.width) * Int($1.height) }) else {
            let why = ThumbnailQueue.movieContentTypes.contains(movie.contentType)
                ? "a movie whose poster has not been made yet: the thumbnail worker makes its thumbnails from its poster frame; EnqueueThumbnails with its key (homepwner thumbs batch \(movieKey)) and ask again once the job is done; a job that failed says why (JobQueue GetJob)"
                : "a movie in a container posters are not made from (MP4, MOV, 3GP, Matroska and WebM are)"
            throw ImageStoreError.failedPrecondition("image \(movieKey) is \(movie.contentType), \(why)")
        }
        let plan = RenditionPlan(
            width: Int(largest.width), height: Int(largest.height), orientation: 1, box: (width, height), fit: mode == .fill ? .fill : .fit)
        let target = plan.size
        if let poster = posters.first(where: { abs(Int($0.width) - target.width) <= 1 && abs(Int($0.height) - target.height) <= 1 }) {
            return (poster, try await read(poster), movie)
        }
        let made = try await rendition(largest.key, width: width, height: height, mode: mode, abandoned: abandoned)
        return (Self.renditionInfo(movie, (Int(made.info.width), Int(made.info.height)), made.data), made.data, movie)
    }
}
