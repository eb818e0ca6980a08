import RCCore
import RCStore

/// Placeholder until the daemon lands.
public enum Daemon {
    public static func main(arguments: [String]) async -> Int32 { 0 }
}
