/// The HTML export's stylesheet, inline in index.html so the folder opens anywhere: a page
/// for the screen, and for print a page break before each location and no backgrounds.
enum ClaimHTMLStyle {
    static let css = """
        :root { color-scheme: light; }
        body { font: 14px/1.45 "DejaVu Sans", system-ui, sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em; color: #111; background: #fff; }
        h1 { font-size: 1.9em; margin: 0 0 .2em; }
        h2 { font-size: 1.35em; margin: 0 0 .3em; border-bottom: 2px solid #333; padding-bottom: .2em; }
        h3 { font-size: 1.05em; margin: 1.2em 0 .3em; }
        .scope { font-size: 1.1em; color: #333; margin: 0 0 1em; }
        .cover { padding-bottom: 1em; }
        dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: .25em 1.2em; margin: 1em 0; }
        dl.fields dt { font-weight: 600; color: #444; }
        dl.fields dd { margin: 0; white-space: pre-line; }
        table { border-collapse: collapse; width: 100%; margin: .5em 0 1.2em; }
        th, td { text-align: left; vertical-align: top; padding: .35em .5em; border-bottom: 1px solid #ddd; }
        th { background: #eef0f3; font-size: .85em; }
        th.num, td.num { text-align: right; white-space: nowrap; }
        table.items { table-layout: fixed; }
        col.qty { width: 5%; } col.description { width: 41%; } col.purchased { width: 12%; } col.amount { width: 14%; }
        td.date { white-space: nowrap; }
        tbody.item tr.row td { border-bottom: none; }
        .meta { color: #666; font-size: .85em; }
        .notes { white-space: pre-line; color: #333; font-size: .9em; margin-top: .2em; }
        tbody.item tr.photos td { border-bottom: 2px solid #bbb; padding-top: 0; }
        figure { display: inline-block; margin: 0 .7em .7em 0; text-align: center; vertical-align: top; }
        figure img { display: block; max-width: 160px; max-height: 160px; width: auto; height: auto; border: 1px solid #ccc; }
        figcaption { font-size: .8em; color: #444; margin-top: .2em; }
        p.unshown { margin: .2em 0; font-size: .9em; }
        tfoot td { font-weight: 600; border-top: 2px solid #333; border-bottom: none; }
        .totals td.num { font-size: 1.15em; font-weight: 600; }
        .warning { color: #8a1c00; }
        code, .sha { font-family: "DejaVu Sans Mono", monospace; font-size: .85em; word-break: break-all; }
        section.location, section.summary, section.checksums { margin-top: 2.5em; }
        footer { margin-top: 3em; color: #666; font-size: .85em; }
        @media print {
          body { margin: 0; max-width: none; font-size: 10pt; }
          *, *::before, *::after { background: transparent !important; box-shadow: none !important; }
          section.location, section.summary, section.checksums { break-before: page; page-break-before: always; margin-top: 0; }
          tbody.item, figure, tr { break-inside: avoid; page-break-inside: avoid; }
          thead { display: table-header-group; }
          a { color: inherit; text-decoration: none; }
        }
        """
}
