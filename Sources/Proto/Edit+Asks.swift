extension Edit {
    /// A crop is asked for (all four of its numbers 0: the whole photo).
    public var hasCrop: Bool { cropX != 0 || cropY != 0 || cropWidth != 0 || cropHeight != 0 }

    /// The edit asks for nothing: no crop, no zoom (`scale` 0), no shape, no output size.
    public var isEmpty: Bool { !hasCrop && scale == 0 && shape == .unspecified && outputSize == 0 }

    /// The edit is a crop and nothing else (which can be made without a decode).
    public var isCropOnly: Bool { scale == 0 && shape == .unspecified && outputSize == 0 }
}
