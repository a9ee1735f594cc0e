import Foundation

/// Small JPEGs written by libjpeg-turbo 2.1's cjpeg, which TurboJPEG's API cannot make:
/// restart markers and arithmetic coding. Each is a 96×32 gradient (the same picture),
/// made with `cjpeg -quality 75` and the options named below; kept as base64 here so the
/// tests need no tool and no file outside the repository.
public enum JPEGFixtures {
    /// `-restart 1B`: baseline, a restart marker after every MCU (11, so RST0…RST7 wrap around).
    public static let restartEveryMCU = bytes(
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAx" +
        "NDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy" +
        "MjIyMjIyMjL/wAARCAAgAGADASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUF" +
        "BAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVW" +
        "V1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi" +
        "4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAEC" +
        "AxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVm" +
        "Z2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq" +
        "8vP09fb3+Pn6/90ABAAB/9oADAMBAAIRAxEAPwDxdbD2qZbD2roFsPap1sPaolizzqWO8z//0PJFsPaplsPaugWw9qnSw9q5ZYsq" +
        "ljvM/9HzFbD2qZbD2roFsPap1sPavPliz1aWO8z/0uQWw9qmWw9q6BbD2qdbD2r7GWLPdpY7zP/T5xbD2qdbD2roFsPap1sPavqp" +
        "Ys+wpY7zP//UyVsPap1sPaugWw9qmWw9q+kliz9DpY7zP//VxFsPaplsPauhWw9qmWw9q+Vliz89pY7zP//WorYe1TLYe1dCth7V" +
        "Mth7V8fLFnyFLHeZ/9dFsPaplsPaugWw9qnWw9q+Ilizw6WO8z//0N5bD2qZbD2roFsPap1sPauqWLPLpY7zP//R6tbD2qZbD2ro" +
        "FsPap0sParlixUsd5n//0u4Ww9qmWw9q6BbD2qdbD2qJYs9KljvM/9k="
    )

    /// `-progressive -restart 1B`: 10 scans, 254 restart markers.
    public static let progressiveWithRestarts = bytes(
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAx" +
        "NDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy" +
        "MjIyMjIyMjL/wgARCAAgAGADASIAAhEBAxEB/8QAGQABAQEBAQEAAAAAAAAAAAAAAgUDBAYB/8QAGQEAAgMBAAAAAAAAAAAAAAAA" +
        "BAUBAgMG/90ABAAB/9oADAMBAAIQAxAAAAHxboOo3//Q8i6GmU//0fMOgxyv/9KO6Gjg7//Tm6UG1cf/1OR0Gy6H/9XhdFque//W" +
        "wdBp0/8A/9f46GiMH//Q73Qeov8A/9Gq6Gkx/9K46DqT/8QAFRABAQAAAAAAAAAAAAAAAAAAABL/2gAIAQEAAQUCh//Qh//Rh//S" +
        "h//Th//Uh//Vh//Wh//Xh//Qh//Rh//Sh//Th//Uh//Vh//Wh//Xh//Qh//Rh//Sh//Th//Uh//Vh//Wh//Xh//Qh//Rh//Sh//T" +
        "h//Uh//Vh//Wh//Xh//Qh//Rh//Sh//Th//Uh//Vh//Wh//Xh//Qh//Rh//Sh//Th//Uh//Vh//Wh//EABYRAAMAAAAAAAAAAAAA" +
        "AAAAAAACA//aAAgBAwEBPwFbn//QW5//0Vuf/9Jbn//TW5//1Fuf/9Vbn//WW5//11uf/9Bbn//RW5//0luf/8QAFhEAAwAAAAAA" +
        "AAAAAAAAAAAAAAED/9oACAECAQE/AXU//9B1P//RdT//0nU//9N1P//UdT//1XU//9Z1P//XdT//0HU//9F1P//SdT//xAAUEAEA" +
        "AAAAAAAAAAAAAAAAAAAA/9oACAEBAAY/An//0H//0X//0n//03//1H//1X//1n//13//0H//0X//0n//03//1H//1X//1n//13//" +
        "0H//0X//0n//03//1H//1X//1n//13//0H//0X//0n//03//1H//1X//1n//13//0H//0X//0n//03//1H//1X//1n//13//0H//" +
        "0X//0n//03//1H//1X//1n//xAAVEAEBAAAAAAAAAAAAAAAAAAAAAf/aAAgBAQABPyGP/9CP/9GP/9KP/9OP/9SP/9WP/9aP/9eP" +
        "/9CP/9GP/9KP/9OP/9SP/9WP/9aP/9eP/9CP/9GP/9KP/9OP/9SP/9WP/9aP/9eP/9CP/9GP/9KP/9OP/9SP/9WP/9aP/9eP/9CP" +
        "/9GP/9KP/9OP/9SP/9WP/9aP/9eP/9CP/9GP/9KP/9OP/9SP/9WP/9aP/9oADAMBAAIAAwAAABAf/9Dj/9EX/9Lv/9OT/9R3/9XD" +
        "/9Y3/9fr/9AT/9Hv/9Ib/8QAFREBAQAAAAAAAAAAAAAAAAAAAGH/2gAIAQMBAT8Qs//Qs//Rs//Ss//Ts//Us//Vs//Ws//Xs//Q" +
        "s//Rs//Ss//EABQRAQAAAAAAAAAAAAAAAAAAAAD/2gAIAQIBAT8QP//QP//RP//SP//TP//UP//VP//WP//XP//QP//RP//SP//E" +
        "ABUQAQEAAAAAAAAAAAAAAAAAAABh/9oACAEBAAE/EIv/0Iv/0Yv/0ov/04v/1Iv/1Yv/1ov/14v/0Iv/0Yv/0ov/04v/1Iv/1Yv/" +
        "1pv/14v/0Iv/0Yv/0ov/04v/1Iv/1Yv/1ov/14v/0Iv/0Yv/0ov/04v/1Iv/1Yv/1ov/14v/0Iv/0Yv/0ov/04v/1Iv/1Yv/1ov/" +
        "14v/0Iv/0Yv/0ov/04v/1Jv/1Yv/1ov/2Q=="
    )

    /// `-arithmetic`: sequential, arithmetic-coded (SOF9).
    public static let arithmetic = bytes(
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAx" +
        "NDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy" +
        "MjIyMjIyMjL/yQARCAAgAGADASIAAhEBAxEB/8wACgAQEAUBEBEF/9oADAMBAAIRAxEAPwD/AM/wsjDtfJSEo944tj8sWqXuIrvz" +
        "hoeDhLEJb/uKHYEFHV8T5xNmxiA58kfqWt7INEeyefUvPnp5cAD2lPoWIPLgPDsKNw9xrU05jBJyG3CJPMn7uEY/Ds29Bzox4B5n" +
        "sqwiH+f3H1UZIeOqZL67XA96OMlykRc8axCvKJcOrRDLD5UcK7KwOmM3j6zCIfCQh13Q2zI8Rbd9Coxa1QW7kP/Z"
    )

    /// `-arithmetic -progressive`: arithmetic-coded progressive (SOF10), 10 scans.
    public static let arithmeticProgressive = bytes(
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAx" +
        "NDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy" +
        "MjIyMjIyMjL/ygARCAAgAGADASIAAhEBAxEB/8wABgAQARD/2gAMAwEAAhADEAAAAf8AoCHEAEFIGxBO66l1nd7rgm8B2zuU6/Xd" +
        "LQOtBX1LVteDxNNYBetdYieiX+mQ/8wABBAF/9oACAEBAAEFAp+SIbikdDnWBJc5zoD/zAAEEQX/2gAIAQMBAT8BHjddWsCb2cNe" +
        "KPX6/X//zAAEEQX/2gAIAQIBAT8BJd5tGjKS6P/MAAQQBf/aAAgBAQAGPwKo/8wABBAF/9oACAEBAAE/IfXayNZJJJJJJJL/2gAM" +
        "AwEAAgADAAAAEHgiXHEbi0T8C//MAAQRBf/aAAgBAwEBPxCmG6r7b5D/zAAEEQX/2gAIAQIBAT8Q/8wABBAF/9oACAEBAAE/EB9V" +
        "PAcx6EDe/FrUl3N3QPT/2Q=="
    )

    private static func bytes(_ base64: String) -> [UInt8] {
        [UInt8](Data(base64Encoded: base64)!)
    }
}
