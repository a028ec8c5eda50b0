// Package lock is berth.lock, a workspace's declared plugins, meant to be
// committed: its format (Lock, Parse, Read, Write), the entry of a trust
// record made by an install (Entry), the checks of berth sync (Check: a
// workspace and the lock's catalogs against the lock), berth outdated
// (ListOutdated), and a lock entry as the exact version
// marketplace.Cache.Install takes (Plugin.Pin). It reads the operator's
// cache and store; it installs nothing itself.
package lock
