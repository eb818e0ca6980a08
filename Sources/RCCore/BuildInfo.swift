/// The version every program reports; `make deb` reads it from here too.
public enum BuildInfo {
    public static let version = "0.1.0"
}
